"""Tiny world-model assets made here: synthetic episodes, an untrained dynamics model and reward model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reward_models import FrameScorer, RewardModelConfig
from toolkits.episodes import Episode, EpisodeWriter
from world_models import DynamicsModel, make_config

PROMPTS = {"reach-v3": "reach the goal", "push-v3": "push the puck to the goal"}


@pytest.fixture(scope="session")
def episodes(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("wm_episodes"))
    writer = EpisodeWriter(root, info={"cameras": ["corner", "gripperPOV"], "image_size": 32})
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
