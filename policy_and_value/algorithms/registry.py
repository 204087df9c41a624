"""Advantage estimators by config name (``algorithm.adv_type``)."""

from __future__ import annotations

from collections.abc import Callable

from policy_and_value.algorithms.advantages import compute_gae, compute_grpo

ADVANTAGES: dict[str, Callable] = {"gae": compute_gae, "grpo": compute_grpo}


def get_advantage_fn(name: str) -> Callable:
    if name not in ADVANTAGES:
        raise ValueError(f"algorithm.adv_type={name!r}: allowed values: {', '.join(ADVANTAGES)}")
    return ADVANTAGES[name]
