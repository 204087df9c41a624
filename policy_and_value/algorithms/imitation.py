"""Advantage-conditioned imitation (RISE): which executed chunks to imitate, and with which advantage
bin in the prompt. The actor's IL mode builds its flow-matching batch here."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from policy_and_value.config.schema import AlgorithmConfig


def chunk_advantages(advantages: torch.Tensor) -> torch.Tensor:
    """float [N]: each chunk's advantage, the mean over its actions for action-level advantages [N, C]."""
    return advantages.reshape(advantages.shape[0], -1).mean(-1)


def selected_chunks(
    advantages: torch.Tensor, loss_mask: torch.Tensor, min_advantage: float | None
) -> torch.Tensor:
    """bool [N]: the valid chunks whose advantage (``chunk_advantages``) reaches ``min_advantage`` (every
    valid chunk without one): what IL imitates."""
    keep = loss_mask.reshape(-1).bool()
    if min_advantage is not None:
        keep = keep & (chunk_advantages(advantages) >= min_advantage)
    return keep


def imitation_batch(
    mb: dict[str, Any], policy: nn.Module, algo: AlgorithmConfig, gen: torch.Generator
) -> dict[str, Any]:
    """Executed chunks with their advantage bins: a chunk's advantage (mean over its actions for
    action-level advantages) picks the prompt's bin; ``advantage_dropout`` of them get none (-1), and
    chunks of finished envs (loss_mask 0), or below ``imitation_min_advantage``, are left out of the loss."""
    bins = policy.advantage_to_bin(chunk_advantages(mb["advantages"]))
    drop = torch.rand(bins.shape, generator=gen) < algo.advantage_dropout
    bins = torch.where(drop.to(bins.device), torch.full_like(bins, -1), bins)
    actions = mb["actions"]
    keep = selected_chunks(mb["advantages"], mb["loss_mask"], algo.imitation_min_advantage).to(actions.dtype)
    action_mask = keep.reshape(-1, 1).expand(actions.shape[0], actions.shape[1])
    return {"obs": mb["obs"], "actions": actions, "advantage_bin": bins, "action_mask": action_mask}
