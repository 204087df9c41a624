"""Policies: the contract (``BasePolicy``), the registry, and the small actor-critic.

Names are imported on first use, so validating a config (which reads ``models.pi0`` presets) needs no torch."""

from __future__ import annotations

from toolkits.base.lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {"base": ("BasePolicy", "PolicyOutput"), "registry": ("make_policy", "register_policy")},
)

__all__ = ["BasePolicy", "PolicyOutput", "make_policy", "register_policy"]
