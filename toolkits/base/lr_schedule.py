"""Learning-rate schedules (linear warmup, then constant or cosine to ``min_lr_ratio``), shared by every trainer."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch


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
    optimizer: torch.optim.Optimizer, cfg: Any, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR over every param group (policy and value lr scale together); ``cfg`` has ``lr_scheduler``,
    ``lr_warmup_steps`` and ``min_lr_ratio`` (an ``OptimConfig``)."""
    if cfg.lr_scheduler == "cosine":
        fn = warmup_cosine_lambda(cfg.lr_warmup_steps, total_steps, cfg.min_lr_ratio)
    else:
        fn = warmup_constant_lambda(cfg.lr_warmup_steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, fn)
