"""Env classes by ``env_type``; heavy simulator imports happen only when that env is built."""

from __future__ import annotations

import os

from policy_and_value.config.schema import EnvConfig
from policy_and_value.envs.base import BatchedEnv

ENV_TYPES = ("metaworld", "gym", "world_model", "libero", "maniskill")


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
    if cfg.env_type == "world_model":
        from world_models.env import WorldModelEnv

        return WorldModelEnv(cfg, num_envs, seed, rank=rank, video_dir=video_dir)
    raise ValueError(f"env.env_type={cfg.env_type!r}: allowed values: {', '.join(ENV_TYPES)}")
