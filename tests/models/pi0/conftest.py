"""Shared builders for the pi0 tests: tiny policies, observations, one tokenizer per session."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from policy_and_value.models.pi0 import Pi0Policy, PromptTokenizer, build_prompt_tokenizer, make_config

PROMPTS = ["press the button", "open the drawer", "pick up the nut and place it onto the peg"]


@pytest.fixture(scope="session")
def hf_tokenizer():
    return build_prompt_tokenizer(PROMPTS)


def randomize_adarms(policy: Pi0Policy, scale: float = 0.05) -> None:
    """pi0.5's adaRMS layers start at zero (closed residuals); open them so every path matters."""
    gen = torch.Generator().manual_seed(123)
    with torch.no_grad():
        for name, param in policy.named_parameters():
            if ".dense." in name:
                param.copy_(torch.randn(param.shape, generator=gen) * scale)


@pytest.fixture
def make_policy(hf_tokenizer) -> Callable[..., Pi0Policy]:
    def build(preset: str = "tiny", seed: int = 0, **overrides) -> Pi0Policy:
        torch.manual_seed(seed)
        cfg = make_config(preset, **overrides)
        policy = Pi0Policy(cfg, PromptTokenizer(hf_tokenizer, cfg.max_token_len))
        if cfg.pi05:
            randomize_adarms(policy)
        return policy

    return build


def build_obs(n: int = 3, views: int = 2, size: int = 64, state_dim: int = 4, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    return {
        "images": torch.randint(0, 256, (n, views, size, size, 3), dtype=torch.uint8, generator=gen),
        "state": torch.randn(n, state_dim, generator=gen),
        "prompt": [PROMPTS[i % len(PROMPTS)] for i in range(n)],
        "task_id": torch.arange(n) % len(PROMPTS),
    }


@pytest.fixture
def make_obs() -> Callable[..., dict]:
    return build_obs


@pytest.fixture
def obs() -> dict:
    return build_obs()
