"""Tiny world-model assets made here: synthetic episodes, an untrained dynamics model and reward model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reward_models import FrameScorer, RewardModelConfig
from toolkits.episodes import Episode, EpisodeWriter
from world_models import DynamicsModel, make_config

PROMPTS = {"reach-v3": "reach the goal", "push-v3": "push the puck to the goal"}
VIEWS = {"cameras": ["corner", "gripperPOV"], "image_size": 32}  # as collected episodes record them


def write_drift_episodes(
    root: str, sign: float, seed: int, n: int, steps: int, start_4: float | None = None
) -> str:
    """``n`` never-solved episodes of ``steps`` random actions whose first four state entries move by
    sign x 0.05 x the action (alternating PROMPTS' tasks; ``start_4`` sets state entry 4 at the start, a part of
    the state space other data may not visit); returns ``root``."""
    rng, writer = np.random.default_rng(seed), EpisodeWriter(root, info=VIEWS)
    for i in range(n):
        task = list(PROMPTS)[i % 2]
        states, actions = [rng.uniform(-0.2, 0.2, 6).astype(np.float32)], []
        if start_4 is not None:
            states[0][4] = start_4
        for _ in range(steps):
            actions.append(np.clip(rng.normal(0.0, 0.7, 4), -1, 1).astype(np.float32))
            states.append(states[-1].copy())
            states[-1][:4] += sign * 0.05 * actions[-1]
        meta = {"prompt": PROMPTS[task], "task": task, "success_once": False, **VIEWS}
        writer.write(Episode(np.zeros((steps + 1, 2, 32, 32, 3), np.uint8), np.stack(states), np.stack(actions),
                             np.zeros(steps, np.float32), np.zeros(steps, bool), meta))  # fmt: skip
    writer.close({})
    return root


@pytest.fixture(scope="session")
def episodes(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("wm_episodes"))
    writer = EpisodeWriter(root, info=VIEWS)
    rng = np.random.default_rng(0)
    for i in range(4):
        task = list(PROMPTS)[i % 2]
        t = 10 + i
        images = rng.integers(0, 255, size=(t + 1, 2, 32, 32, 3), dtype=np.uint8)
        meta = {"prompt": PROMPTS[task], "task": task, "success_once": True}
        writer.write(Episode(images, rng.normal(size=(t + 1, 39)).astype(np.float32),
                             rng.uniform(-1, 1, (t, 4)).astype(np.float32), np.zeros(t, np.float32),
                             np.zeros(t, bool), meta))  # fmt: skip
    writer.close({})
    return root


def tiny_dynamics(**overrides) -> DynamicsModel:
    torch.manual_seed(0)
    fields = {"image_size": 32, "num_views": 2, "state_dim": 39, "predict_state": True,
              "prompts": sorted(PROMPTS.values()), "num_inference_steps": 2,
              "transformer": {"num_attention_heads": 2, "attention_head_dim": 8, "num_layers": 1, "cross_attention_dim": 16},
              "context_dim": 16, **overrides}  # fmt: skip
    return DynamicsModel(make_config("tiny", **fields)).eval()


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("wm_models")
    dyn = tiny_dynamics().save_pretrained(root / "dynamics")
    scorer = FrameScorer(
        RewardModelConfig(
            num_views=2, image_size=32, channels=[8], hidden=16, prompts=sorted(PROMPTS.values())
        )
    )
    return str(dyn), str(scorer.save_pretrained(root / "reward"))
