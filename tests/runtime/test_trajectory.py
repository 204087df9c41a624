"""Trajectory shard utilities: stacking observations, column slicing, flattening, taking samples."""

import numpy as np
import torch

from policy_and_value.workers.trajectory import (
    cat_shards,
    flatten_time,
    obs_index,
    obs_stack,
    shard_columns,
    take,
)


def _obs(t: int, n: int = 4) -> dict:
    return {
        "state": torch.full((n, 2), float(t)),
        "task_id": torch.arange(n),
        "prompt": [f"p{t}_{i}" for i in range(n)],
    }


def test_obs_stack_and_index_keep_prompts_aligned():
    stacked = obs_stack([_obs(0), _obs(1), _obs(2)])
    assert stacked["state"].shape == (3, 4, 2)
    assert stacked["prompt"].shape == (3, 4) and stacked["prompt"][2, 3] == "p2_3"
    sub = obs_index(_obs(5), torch.tensor([1, 3]))
    assert sub["prompt"] == ["p5_1", "p5_3"]
    assert torch.equal(sub["task_id"], torch.tensor([1, 3]))


def test_shard_columns_cat_roundtrip_and_take():
    shard = {
        "obs": obs_stack([_obs(t) for t in range(3)]),
        "rewards": torch.arange(12.0).reshape(3, 4),
        "values": torch.arange(16.0).reshape(4, 4),
        "replay": {"raw_actions": torch.randn(3, 4, 1, 2)},
    }
    left, right = shard_columns(shard, 0, 1), shard_columns(shard, 1, 4)
    back = cat_shards([left, right])
    assert torch.equal(back["rewards"], shard["rewards"])
    assert torch.equal(back["values"], shard["values"])
    assert (back["obs"]["prompt"] == shard["obs"]["prompt"]).all()
    flat = flatten_time({"obs": back["obs"], "rewards": back["rewards"]}, 3)
    assert flat["rewards"].shape == (12,) and flat["obs"]["prompt"].shape == (12,)
    sel = take(flat, torch.tensor([0, 5, 11]))
    assert sel["obs"]["prompt"] == ["p0_0", "p1_1", "p2_3"]
    assert torch.equal(sel["rewards"], torch.tensor([0.0, 5.0, 11.0]))
    assert isinstance(flat["obs"]["prompt"], np.ndarray)
