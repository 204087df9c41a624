"""Environments: the batched env contract, real simulators (Meta-World, gymnasium) and the registry."""

from policy_and_value.envs.base import BatchedEnv, EnvSpec, Observation
from policy_and_value.envs.registry import make_env

__all__ = ["BatchedEnv", "EnvSpec", "Observation", "make_env"]
