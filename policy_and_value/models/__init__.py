"""Policies: the contract (``BasePolicy``), the registry, and the small actor-critic."""

from policy_and_value.models.base import BasePolicy, PolicyOutput
from policy_and_value.models.registry import make_policy, register_policy

__all__ = ["BasePolicy", "PolicyOutput", "make_policy", "register_policy"]
