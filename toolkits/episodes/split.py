"""The one train/held-out split of an episode dataset, shared by imitation, world-model and reward-model
training and their benchmarks (so a benchmark's held-out episodes are the ones its model never saw)."""

from __future__ import annotations

from typing import Any

import numpy as np


def split_episodes(entries: list[dict[str, Any]], fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Deterministic split of episode indices, stratified by task and success: every task keeps
    successful and failed episodes on both sides when it has at least two of each, and at least one
    episode always trains."""
    rng = np.random.default_rng(seed)
    groups: dict[tuple[str, bool], list[int]] = {}
    for i, e in enumerate(entries):
        groups.setdefault((str(e.get("task")), bool(e.get("success_once", True))), []).append(i)
    train, held = [], []
    for key in sorted(groups):
        members = rng.permutation(groups[key]).tolist()
        k = min(
            len(members) - 1,
            max(1 if len(members) > 1 and fraction > 0 else 0, int(round(len(members) * fraction))),
        )
        held += members[:k]
        train += members[k:]
    return sorted(train), sorted(held)
