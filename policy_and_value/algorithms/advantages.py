"""Advantage estimators over time-major trajectories.

Shapes: ``rewards`` [T, B] (chunk-level) or [T, B, C] (action-level: the C actions of a chunk are C
consecutive time steps), ``values`` [T+1, B] or [T+1, B, C] (the last row bootstraps), ``dones`` and
``loss_mask`` [T, B]. A done ends the episode after the chunk's last action.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def compute_gae(
    rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, gamma: float, gae_lambda: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation; returns (advantages, returns) shaped like ``rewards``."""
    action_level = rewards.dim() == 3
    if action_level:
        T, B, C = rewards.shape
        # Flatten chunks into time: step t*C + c. Only the last sub-step of a chunk can end an episode.
        flat_r = rewards.permute(0, 2, 1).reshape(T * C, B)
        boot = values[-1, :, 0]
        flat_v = torch.cat([values[:-1].permute(0, 2, 1).reshape(T * C, B), boot.unsqueeze(0)])
        flat_d = torch.zeros(T, C, B, dtype=rewards.dtype, device=rewards.device)
        flat_d[:, -1] = dones.to(rewards.dtype)
        adv, ret = compute_gae(flat_r, flat_v, flat_d.reshape(T * C, B), gamma, gae_lambda)
        return adv.reshape(T, C, B).permute(0, 2, 1), ret.reshape(T, C, B).permute(0, 2, 1)
    T = rewards.shape[0]
    not_done = 1.0 - dones.to(rewards.dtype)
    advantages = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in reversed(range(T)):
        delta = rewards[t] + gamma * values[t + 1] * not_done[t] - values[t]
        last = delta + gamma * gae_lambda * not_done[t] * last
        advantages[t] = last
    return advantages, advantages + values[:-1]


def compute_grpo(
    rewards: torch.Tensor, loss_mask: torch.Tensor, group_size: int, eps: float = 1e-6
) -> torch.Tensor:
    """Group-relative advantages: each env's episode return normalised within its group of envs.

    Consecutive ``group_size`` envs share a reset state; the advantage is broadcast to the env's
    valid steps (``loss_mask``) and 0 elsewhere.
    """
    return normalise_in_groups(group_returns(rewards, loss_mask, group_size), loss_mask, eps)


def normalise_in_groups(grouped: torch.Tensor, loss_mask: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """GRPO's advantages [T, B] from episode returns [B // group_size, group_size] (``group_returns``)."""
    normed = (grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, unbiased=False, keepdim=True) + eps)
    return normed.reshape(-1).unsqueeze(0) * loss_mask.to(normed.dtype)


def _valid_rewards(rewards: torch.Tensor, loss_mask: torch.Tensor, group_size: int) -> torch.Tensor:
    """Each env's reward per step [T, B] (summed over a chunk's actions), 0 at invalid steps; checks that
    ``group_size`` divides the B envs (the grouping both return layouts below use)."""
    if rewards.dim() == 3:
        rewards = rewards.sum(-1)
    B = rewards.shape[1]
    if B % group_size:
        raise ValueError(f"algorithm.group_size={group_size}: must divide the {B} envs of the batch")
    return rewards * loss_mask.to(rewards.dtype)


def group_returns(rewards: torch.Tensor, loss_mask: torch.Tensor, group_size: int) -> torch.Tensor:
    """Each env's episode return (its rewards over valid steps), as [B // group_size, group_size]."""
    return _valid_rewards(rewards, loss_mask, group_size).sum(0).view(-1, group_size)


def group_returns_to_go(rewards: torch.Tensor, loss_mask: torch.Tensor, group_size: int) -> torch.Tensor:
    """Each env's return from every chunk on (its rewards over valid steps from t to the end), as
    [T, B // group_size, group_size]: a chunk is credited with what followed it, not what came before."""
    to_go = _valid_rewards(rewards, loss_mask, group_size).flip(0).cumsum(0).flip(0)  # [T, B]
    return to_go.view(to_go.shape[0], -1, group_size)


def normalise_to_go_in_groups(
    to_go: torch.Tensor, loss_mask: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """Advantages [T, B] from returns to go [T, B // group_size, group_size] (``group_returns_to_go``): each
    minus the mean of the group's envs still in their episode at that chunk index (a per-index baseline, as
    GRPO's per-start one), divided by the group's spread over all its chunks, so late chunks, with little
    left to earn, get small advantages rather than noise blown up to unit size."""
    m = loss_mask.to(to_go.dtype).view_as(to_go)
    count = m.sum(-1, keepdim=True).clamp(min=1.0)
    centred = (to_go - (to_go * m).sum(-1, keepdim=True) / count) * m
    group_var = (centred**2).sum((0, 2), keepdim=True) / m.sum((0, 2), keepdim=True).clamp(min=1.0)
    return (centred / (group_var.sqrt() + eps)).reshape(loss_mask.shape)


def grpo_credit(
    grouped: torch.Tensor, rewards: torch.Tensor, loss_mask: torch.Tensor, credit: str = "episode"
) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO's (advantages, returns) [T, B] from episode returns ``grouped`` (``group_returns``): each chunk credited
    with its episode's return (``credit="episode"``), its return from that chunk on (``to_go``) or its own reward
    (``step``: with a potential's change as reward, the value the chunk itself gained), each centred on the group's at
    the same chunk index in the last two."""
    mask = loss_mask.to(grouped.dtype)
    if credit in ("to_go", "step"):
        size = grouped.shape[1]
        if credit == "to_go":
            returns = group_returns_to_go(rewards, loss_mask, size)
        else:
            returns = _valid_rewards(rewards, loss_mask, size).view(loss_mask.shape[0], -1, size)
        return normalise_to_go_in_groups(returns, loss_mask), returns.reshape(loss_mask.shape) * mask
    return normalise_in_groups(grouped, loss_mask), grouped.reshape(1, -1) * mask


def mixed_groups(grouped: torch.Tensor, tol: float = 1e-6) -> torch.Tensor:
    """bool [num_groups]: whether a group's episode returns differ (``group_returns``' layout). A group
    whose samples all ended alike (all succeeded, or all failed) has nothing for GRPO to compare."""
    return (grouped.max(1).values - grouped.min(1).values) > tol


def expand_mask(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``loss_mask`` [T, B] broadcast to ``like``'s shape ([T, B] or action-level [T, B, C]), in its dtype."""
    m = mask.to(like.dtype)
    while m.dim() < like.dim():
        m = m.unsqueeze(-1)
    return m.expand_as(like)


def normalize_advantages(
    adv: torch.Tensor,
    mask: torch.Tensor,
    group: dist.ProcessGroup | None = None,
    eps: float = 1e-8,
    segments: torch.Tensor | None = None,
    num_segments: int = 1,
) -> torch.Tensor:
    """Masked whitening with mean/std over the whole batch of every rank in ``group``; with ``segments``
    ([T, B] ids in ``[0, num_segments)``, e.g. each env's env group) each segment over its own chunks."""
    m = expand_mask(mask, adv)
    seg = torch.zeros_like(m, dtype=torch.long) if segments is None else expand_mask(segments, adv).long()
    one_hot = torch.nn.functional.one_hot(seg, num_segments).to(adv.dtype) * m.unsqueeze(-1)
    a = adv.unsqueeze(-1)
    dims = tuple(range(adv.dim()))
    stats = torch.stack([(a * one_hot).sum(dims), (a * a * one_hot).sum(dims), one_hot.sum(dims)]).double()
    if group is not None and dist.is_initialized() and dist.get_world_size(group) > 1:
        dist.all_reduce(stats, group=group)
    total, sq, count = stats[0], stats[1], stats[2].clamp(min=1.0)
    mean = total / count
    std = (sq / count - mean * mean).clamp(min=0.0).sqrt()
    return (adv - mean.to(adv.dtype)[seg]) / (std + eps).to(adv.dtype)[seg] * m
