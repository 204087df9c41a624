"""The PPO optimiser (AdamW, the value head in its own group) and the optimiser steps its lr schedule spans."""

from __future__ import annotations

import torch
from torch import nn

from policy_and_value.config.schema import JobConfig, OptimConfig


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
