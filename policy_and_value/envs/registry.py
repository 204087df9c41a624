"""Env classes by ``env_type``. The simulators of this package are built here (their heavy imports happen only
when one is built); an env type defined elsewhere, such as the world model's, registers itself with
``register_env`` when its module is imported, so this registry never imports the parts above it."""

from __future__ import annotations

import os
from collections.abc import Callable

from policy_and_value.config.schema import EnvConfig
from policy_and_value.envs.base import BatchedEnv

ENV_TYPES = ("metaworld", "gym", "world_model", "libero", "maniskill")
# env_type -> factory(cfg, num_envs, seed, rank, video_dir), filled by register_env
_REGISTERED: dict[str, Callable[..., BatchedEnv]] = {}


def register_env(env_type: str, factory: Callable[..., BatchedEnv]) -> None:
    """Make ``make_env`` build ``env_type`` with ``factory(cfg, num_envs, seed, rank=, video_dir=)``."""
    if env_type not in ENV_TYPES:
        raise ValueError(f"env_type={env_type!r}: not in the schema's env types {', '.join(ENV_TYPES)}")
    _REGISTERED[env_type] = factory


def make_env(
    cfg: EnvConfig, num_envs: int, seed: int, rank: int = 0, video_dir: str | None = None
) -> BatchedEnv:
    """Build ``num_envs`` batched envs of ``cfg.env_type``; ``rank`` spreads tasks and seeds over workers."""
    if cfg.env_type == "gym":
        from policy_and_value.envs.gym_env import GymEnv

        return GymEnv(cfg, num_envs, seed)
    if cfg.env_type == "metaworld":
        os.environ.setdefault("MUJOCO_GL", "egl")
        from policy_and_value.envs.metaworld_env import MetaWorldEnv

        return MetaWorldEnv(cfg, num_envs, seed, rank=rank, video_dir=video_dir)
    if cfg.env_type == "libero":
        os.environ.setdefault("MUJOCO_GL", "egl")
        from policy_and_value.envs.libero_env import LiberoEnv

        return LiberoEnv(cfg, num_envs, seed, rank=rank, video_dir=video_dir)
    if cfg.env_type == "maniskill":
        from policy_and_value.envs.maniskill_env import ManiSkillEnv

        return ManiSkillEnv(cfg, num_envs, seed, rank=rank, video_dir=video_dir)
    if cfg.env_type in _REGISTERED:
        return _REGISTERED[cfg.env_type](cfg, num_envs, seed, rank=rank, video_dir=video_dir)
    raise ValueError(
        f"env.env_type={cfg.env_type!r}: not registered; import the module that defines it first "
        f"(world_model: world_models.env); built here: gym, metaworld, libero, maniskill"
    )
