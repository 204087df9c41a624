"""Credit assignment for one training step: a trajectory's rewards become per-chunk advantages and
returns, by GAE or GRPO, then normalised, scaled and (for the ablations) reversed or shuffled.

Kept apart from the actor worker so the recipe's choices read in one place and test without a policy.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from policy_and_value.algorithms.advantages import (
    compute_gae,
    expand_mask,
    group_returns,
    grpo_credit,
    mixed_groups,
    normalize_advantages,
)
from policy_and_value.config.schema import AblationConfig, AlgorithmConfig


def assign_credit(
    traj: dict[str, Any],
    algo: AlgorithmConfig,
    shuffle_gen: torch.Generator,
    group: dist.ProcessGroup | None = None,
    env_groups: list[str] | None = None,
    ablation: AblationConfig | None = None,
) -> dict[str, float]:
    """Set ``traj``'s "advantages", "returns" and "values" (the rollout's values less the bootstrap row,
    zeros without a critic) from its rewards; GRPO's ``drop_uniform_groups`` also narrows "loss_mask".

    ``group``: the ranks whose whole batch normalises the advantages. ``env_groups``: the names of the
    mixed env's groups that ``traj["env_group"]`` indexes (``normalize_advantages_by: env_group`` whitens
    each group's advantages on its own). ``ablation``: the job's control, if any (shuffled or reversed
    advantages; ``AblationConfig``). Returns the rollout metrics (the raw advantages' and the
    returns' range, GRPO's group spread, each env group's raw advantage mean and spread, its mean return)."""
    ablation = ablation or AblationConfig()
    mask = traj["loss_mask"]
    spread: dict[str, float] = {}
    if algo.adv_type == "gae":
        adv, ret = compute_gae(traj["rewards"], traj["values"], traj["dones"], algo.gamma, algo.gae_lambda)
    else:
        grouped = group_returns(traj["rewards"], mask, algo.group_size)
        mixed = mixed_groups(grouped)
        if algo.drop_uniform_groups:  # dynamic sampling: a group whose episodes all ended alike
            mask = traj["loss_mask"] = mask * mixed.repeat_interleave(algo.group_size).to(mask.dtype)
        adv, ret = grpo_credit(grouped, traj["rewards"], mask, credit=algo.grpo_return)
        # how much the actions of one start differ in outcome: ~0 means GRPO normalises noise
        spread["rollout/group_return_std"] = float(grouped.std(1, unbiased=False).mean())
        spread["rollout/mixed_group_fraction"] = float(mixed.float().mean())
    raw = adv
    segments = traj.get("env_group") if env_groups else None
    if algo.normalize_advantages:
        by_group = algo.normalize_advantages_by == "env_group" and segments is not None
        adv = normalize_advantages(
            adv, mask, group=group,
            segments=segments if by_group else None, num_segments=len(env_groups) if by_group else 1,
        )  # fmt: skip
    adv = adv * (-algo.advantage_scale if ablation.reverse_advantages else algo.advantage_scale)
    valid = expand_mask(mask, raw).bool()
    seg = None if segments is None else expand_mask(segments, raw).long()  # each chunk's env group
    if (
        ablation.shuffle_advantages or ablation.shuffle_advantages_of
    ):  # ablation: the same values, to random chunks
        pick = valid
        if ablation.shuffle_advantages_of:  # only these env groups' chunks, each group among its own
            pick = valid & torch.isin(seg, _group_ids(ablation, env_groups))
        adv = adv.clone()
        values = adv[pick]
        adv[pick] = values[torch.randperm(values.numel(), generator=shuffle_gen).to(values.device)]
    traj["advantages"], traj["returns"] = adv, ret
    traj["values"] = torch.zeros_like(ret) if traj["values"] is None else traj["values"][:-1]
    sel_adv, sel_ret = raw[valid], ret[valid]
    if sel_adv.numel() == 0:  # e.g. every GRPO group dropped
        return spread
    if seg is not None:
        spread.update(_per_group(raw, ret, valid, seg, env_groups))
    return {
        "rollout/advantages_mean": float(sel_adv.mean()),
        "rollout/advantages_max": float(sel_adv.max()),
        "rollout/advantages_min": float(sel_adv.min()),
        "rollout/returns_mean": float(sel_ret.mean()),
        "rollout/returns_max": float(sel_ret.max()),
        "rollout/returns_min": float(sel_ret.min()),
        **spread,
    }


def _per_group(
    raw: torch.Tensor, ret: torch.Tensor, valid: torch.Tensor, seg: torch.Tensor, names: list[str]
) -> dict[str, float]:
    """Each env group's raw advantage mean and spread and its mean return over its valid chunks (this
    rank's; ``seg``: each chunk's group): a group centred elsewhere shifts the others' when whitened together."""
    out: dict[str, float] = {}
    for g, name in enumerate(names):
        mine = valid & (seg == g)
        if mine.any():
            out[f"rollout/{name}/advantages_mean"] = float(raw[mine].mean())
            out[f"rollout/{name}/advantages_std"] = float(raw[mine].std(unbiased=False))
            out[f"rollout/{name}/returns_mean"] = float(ret[mine].mean())
    return out


def _group_ids(ablation: AblationConfig, names: list[str] | None) -> torch.Tensor:
    """The indices of ``ablation.shuffle_advantages_of``'s env groups (validated to exist)."""
    return torch.tensor([(names or []).index(name) for name in ablation.shuffle_advantages_of])
