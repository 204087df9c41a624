"""Learning-rate schedule (linear warmup then cosine to ``min_lr_ratio``) and the PPO optimiser."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from policy_and_value.config.schema import JobConfig, OptimConfig


def warmup_cosine_lambda(warmup_steps: int, total_steps: int, min_lr_ratio: float) -> Callable[[int], float]:
    """Multiplier: 0 -> 1 linearly over warmup, then cosine down to ``min_lr_ratio`` at ``total_steps``."""

    def fn(step: int) -> float:
        if warmup_steps > 0 and step < warmup_steps:
            return (step + 1) / warmup_steps
        span = max(1, total_steps - warmup_steps)
        progress = min(1.0, (step - warmup_steps) / span)
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return fn


def warmup_constant_lambda(warmup_steps: int) -> Callable[[int], float]:
    """Multiplier: linear warmup, then 1."""
    return lambda step: (step + 1) / warmup_steps if warmup_steps > 0 and step < warmup_steps else 1.0


def build_scheduler(
    optimizer: torch.optim.Optimizer, cfg: OptimConfig, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR over every param group (policy and value lr scale together)."""
    if cfg.lr_scheduler == "cosine":
        fn = warmup_cosine_lambda(cfg.lr_warmup_steps, total_steps, cfg.min_lr_ratio)
    else:
        fn = warmup_constant_lambda(cfg.lr_warmup_steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, fn)


def scheduled_optimizer_steps(cfg: JobConfig) -> int:
    """The optimiser steps the lr schedule spans: ``actor.optim.total_training_steps``, or those of
    ``runner.max_steps`` training steps (``update_epoch`` passes over each step's samples)."""
    if cfg.actor.optim.total_training_steps:
        return cfg.actor.optim.total_training_steps
    algo = cfg.algorithm
    samples = cfg.env.train.num_envs * algo.n_chunk_steps * algo.rollout_epoch
    return algo.update_epoch * max(1, samples // cfg.actor.global_batch_size) * cfg.runner.max_steps


def split_value_head(policy: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """The trainable parameters as (the value head's: named ``*value_head*``, the rest)."""
    value, rest = [], []
    for name, p in policy.named_parameters():
        if p.requires_grad:
            (value if "value_head" in name else rest).append(p)
    return value, rest


def build_optimizer(policy: nn.Module, cfg: OptimConfig, shard: bool = False) -> torch.optim.Optimizer:
    """AdamW with the value head (parameters named ``*value_head*``) in its own group at ``value_lr``.
    ``shard``: torch's ``ZeroRedundancyOptimizer`` around it, so each rank of the (already initialised)
    process group keeps the AdamW state of its share of the parameters only."""
    value, rest = split_value_head(policy)
    groups = [{"params": rest, "lr": cfg.lr}]
    if value:
        groups.append({"params": value, "lr": cfg.value_lr or cfg.lr})
    kwargs = {"lr": cfg.lr, "betas": cfg.adam_betas, "eps": cfg.adam_eps, "weight_decay": cfg.weight_decay}
    if shard:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer(groups, optimizer_class=torch.optim.AdamW, **kwargs)
    return torch.optim.AdamW(groups, **kwargs)
