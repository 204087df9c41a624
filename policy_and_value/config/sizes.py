"""Sizes that must agree before any worker starts: the actions and state the envs give, the model's
``action_dim``, and what a saved policy (``rollout.model_dir``) was trained with. Read from the configs
alone, so a mismatch is one line in a second instead of a worker traceback after Ray started."""

from __future__ import annotations

import json
import os

from policy_and_value.config.schema import EnvConfig, JobConfig
from policy_and_value.envs.metaworld_tasks import FULL_STATE_DIM, PROPRIO_DIM, selected_state_dim
from toolkits.base.errors import config_error

METAWORLD_ACTION_DIM = 4  # end-effector xyz delta + gripper


def env_sizes(env: EnvConfig) -> tuple[int, int] | None:
    """(action_dim, state_dim) of ``env``, or None where only building it tells (gym)."""
    if env.env_type == "gym":
        return None
    state_dim = FULL_STATE_DIM if env.state_type == "full" else PROPRIO_DIM
    if env.env_type == "metaworld":
        return METAWORLD_ACTION_DIM, state_dim
    if env.env_type == "libero":
        from policy_and_value.envs.libero_tasks import ACTION_DIM, STATE_DIM

        return ACTION_DIM, STATE_DIM
    if env.env_type == "maniskill":
        from policy_and_value.envs.maniskill_tasks import ACTION_DIM, STATE_DIM

        return ACTION_DIM, STATE_DIM
    if env.env_type == "world_model" and env.dynamics_model_config is not None:
        with open(os.path.join(env.dynamics_model_config, "config.json")) as f:
            saved = json.load(f)
        # the model's states as select_state gives them: Meta-World's 39 (full) or the hand's 4 (proprio);
        # LIBERO's and ManiSkill's 8 numbers are proprioception, kept whole either way
        saved_dim = int(saved.get("state_dim", 0))  # 0: a model without state input
        if saved_dim > 0:
            state_dim = selected_state_dim(saved_dim, env.state_type)
        return int(saved["action_dim"]), state_dim
    return None


def check_sizes(cfg: JobConfig, envs: list[tuple[str, EnvConfig]]) -> None:
    """Every env in ``envs`` ((key, config) pairs: train groups and eval) acts in the same action size, which
    ``model.action_dim`` (when set) and a saved pi0 policy share; the policy reads the envs' state size."""
    known = [(key, env, sizes) for key, env in envs if (sizes := env_sizes(env)) is not None]
    if not known:
        return
    key0, env0, (action_dim, state_dim) = known[0]
    for key, env, (a, s) in known[1:]:
        if a != action_dim:
            raise config_error(
                f"{key}.env_type", env.env_type, f"gives {a} actions per step, {key0} ({env0.env_type}) {action_dim}: one policy acts in both"
            )  # fmt: skip
        if s != state_dim:
            raise config_error(
                f"{key}.state_type", env.state_type, f"gives a {s}-dim state, {key0}.state_type={env0.state_type} a {state_dim}-dim one: one policy reads both"
            )  # fmt: skip
    where = f"{key0} ({env0.env_type})"
    if cfg.model.action_dim is not None and cfg.model.action_dim != action_dim:
        raise config_error(
            "model.action_dim", cfg.model.action_dim,
            f"{where} gives {action_dim} actions per step; leave it unset to take the env's",
        )  # fmt: skip
    model_dir = cfg.rollout.model_dir
    if cfg.model.policy_type not in ("pi0", "pi05") or model_dir is None:
        return
    with open(os.path.join(model_dir, "config.json")) as f:
        saved = json.load(f)
    if saved.get("action_dim") != action_dim:
        raise config_error(
            "rollout.model_dir", model_dir,
            f"the policy was trained with action_dim={saved.get('action_dim')}, {where} gives {action_dim}",
        )  # fmt: skip
    if saved.get("state_dim") != state_dim:
        raise config_error(
            "rollout.model_dir", model_dir,
            f"the policy was trained with state_dim={saved.get('state_dim')}, {key0}.state_type="
            f"{env0.state_type} gives {state_dim}",
        )  # fmt: skip
