"""``assign_credit`` without a policy: what the actor's step hands its losses, from a GAE trajectory of
3 chunks x 4 envs (one env finished after its first chunk)."""

from __future__ import annotations

import torch

from policy_and_value.algorithms import assign_credit
from policy_and_value.config.schema import AblationConfig, AlgorithmConfig


def trajectory(with_values: bool = True) -> dict:
    g = torch.Generator().manual_seed(0)
    mask = torch.ones(3, 4)
    mask[1:, 3] = 0
    return {
        "rewards": torch.randn(3, 4, generator=g),
        "values": torch.randn(4, 4, generator=g) if with_values else None,
        "dones": torch.zeros(3, 4),
        "loss_mask": mask,
    }


def credit(**algo) -> tuple[dict, dict]:
    traj = trajectory(algo.pop("with_values", True))
    ablation = AblationConfig(**{k: algo.pop(k) for k in list(algo) if k in AblationConfig.model_fields})
    metrics = assign_credit(
        traj, AlgorithmConfig(**algo), torch.Generator().manual_seed(1), ablation=ablation
    )
    return traj, metrics


def test_gae_returns_values_and_whitened_advantages():
    """Returns are the raw advantages plus the values without the bootstrap row; the handed advantages
    are whitened over the valid chunks, and the metrics describe the raw ones."""
    traj, metrics = credit()
    values = trajectory()["values"]
    assert torch.equal(traj["values"], values[:-1])
    raw = traj["returns"] - values[:-1]
    valid = traj["loss_mask"].bool()
    assert (
        abs(traj["advantages"][valid].mean()) < 1e-5
        and abs(traj["advantages"][valid].std(unbiased=False) - 1) < 1e-4
    )
    assert torch.all(traj["advantages"][~valid] == 0)
    assert metrics["rollout/advantages_max"] == float(raw[valid].max())


def test_scale_reverse_and_shuffle():
    """advantage_scale multiplies, reverse_advantages negates, shuffle_advantages permutes the valid ones."""
    plain = credit()[0]["advantages"]
    valid = trajectory()["loss_mask"].bool()
    assert torch.allclose(credit(advantage_scale=3.0)[0]["advantages"], 3.0 * plain)
    assert torch.equal(credit(reverse_advantages=True)[0]["advantages"], -plain)
    shuffled = credit(shuffle_advantages=True)[0]["advantages"]
    assert torch.equal(shuffled[valid].sort().values, plain[valid].sort().values)
    assert not torch.equal(shuffled, plain) and torch.all(shuffled[~valid] == 0)


def test_no_critic_gives_zero_values():
    """GRPO needs no value head: the rollout records no values, and zeros are handed on as values."""
    traj, _ = credit(with_values=False, adv_type="grpo", group_size=2)
    assert torch.equal(traj["values"], torch.zeros(3, 4))
