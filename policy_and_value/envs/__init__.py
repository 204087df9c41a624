"""Environments: the batched env contract, real simulators (Meta-World, gymnasium) and the registry.

Names are imported on first use, so the static task tables (``metaworld_tasks``) load without torch."""

from __future__ import annotations

from toolkits.base.lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__, {"base": ("BatchedEnv", "EnvSpec", "Observation"), "registry": ("make_env",)}
)

__all__ = ["BatchedEnv", "EnvSpec", "Observation", "make_env"]
