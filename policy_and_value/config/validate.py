"""Validate a composed config: schema (types, ranges, unknown keys) then cross-field checks.

Every failure is one line ``config error: <key>=<value>: <what is allowed>`` raised as ``ConfigError``
before anything heavy (Ray, models, simulators) starts.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
from typing import Any

from pydantic import BaseModel, ValidationError

from policy_and_value.config.errors import ConfigError, config_error
from policy_and_value.config.schema import EnvConfig, JobConfig
from policy_and_value.config.sizes import check_sizes
from policy_and_value.runtime.placement import PlacementError, parse_placement


def _lookup(data: Any, loc: tuple) -> Any:
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def _model_at(loc: tuple, root: type[BaseModel] = JobConfig) -> type[BaseModel] | None:
    """The pydantic model that owns the field at ``loc`` (for unknown-key suggestions)."""
    model: Any = root
    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        ann = model.model_fields[part].annotation
        args = getattr(ann, "__args__", ())
        candidates = [a for a in (ann, *args) if isinstance(a, type) and issubclass(a, BaseModel)]
        model = candidates[0] if candidates else ann
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def format_validation_error(err: ValidationError, data: dict, root: type[BaseModel] = JobConfig) -> str:
    """The first schema error of ``root`` as one ``config error: key=value: ...`` line."""
    e = err.errors()[0]
    loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p in ("function-after",))))
    key = ".".join(str(p) for p in loc)
    value = e.get("input", _lookup(data, loc))
    if e["type"] == "extra_forbidden":
        parent = _model_at(loc[:-1], root)
        allowed = sorted(parent.model_fields) if parent else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {'.'.join([*map(str, loc[:-1]), close[0]])!r}? " if close else ""
        return f"config error: {key}: unknown key; {hint}allowed keys here: {', '.join(allowed)}"
    msg = e["msg"]
    if e["type"] == "literal_error":
        msg = "allowed values: " + msg.split("Input should be ", 1)[-1].replace("'", "")
    return f"config error: {key}={value!r}: {msg[0].lower() + msg[1:]}"


def check_episode_data(
    path: str, tasks: list[str] | None, path_key: str = "data.path", tasks_key: str = "data.tasks"
) -> Any:
    """``path`` (the key ``path_key``) holds collected episodes with every task of ``tasks`` (the key
    ``tasks_key``); returns the opened ``EpisodeDataset`` (every user of episode data starts with this)."""
    from toolkits.episodes import EpisodeDataset

    if not os.path.isfile(os.path.join(path, "index.json")):
        raise config_error(
            path_key, path, "no index.json here (write one with python -m toolkits.collect_episodes)"
        )
    dataset = EpisodeDataset(path)
    missing = [t for t in tasks or [] if t not in dataset.tasks]
    if missing:
        raise config_error(tasks_key, tasks, f"{missing} not in the dataset {path}; it has {dataset.tasks}")
    return dataset


def validate_config(data: dict[str, Any], num_devices: int | None = None) -> JobConfig:
    """Schema + cross checks; ``num_devices`` per node defaults to the GPU count, else CPU slots."""
    try:
        cfg = JobConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, data)) from None
    if num_devices is None:
        num_devices = _visible_gpus() or cfg.cluster.num_devices_per_node
    try:
        placement = parse_placement(cfg.cluster.component_placement, cfg.cluster.num_nodes, num_devices)
    except PlacementError as err:
        raise ConfigError(str(err)) from None
    ranks = {c: placement.world_size(c) for c in ("env", "rollout", "actor")}
    cfg = _apply_num_group_envs(cfg, ranks)
    _check_envs(cfg, ranks)
    _check_batches(cfg, ranks)
    _check_algorithm(cfg)
    _check_paths(cfg)
    _check_pi0(cfg)
    check_sizes(cfg, _all_envs(cfg))
    _check_offline_data(cfg)
    _check_backends(cfg)
    return cfg


def _visible_gpus() -> int:
    if importlib.util.find_spec("torch") is None:
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _check_env(env: EnvConfig, prefix: str, ranks: dict[str, int], stages: int) -> None:
    if env.env_type == "gym" and len(env.tasks) != 1:
        raise config_error(f"{prefix}.tasks", env.tasks, "env_type gym takes exactly one gymnasium id")
    if env.env_type == "metaworld":
        from policy_and_value.envs.metaworld_tasks import MT50_TASKS

        for t in env.tasks:
            if t not in MT50_TASKS:
                close = difflib.get_close_matches(t, MT50_TASKS, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise config_error(
                    f"{prefix}.tasks", t, f"unknown Meta-World task; {hint}allowed: MT50 names like reach-v3"
                )
        for cam in env.cameras:
            if cam not in (
                "corner",
                "corner2",
                "corner3",
                "corner4",
                "topview",
                "behindGripper",
                "gripperPOV",
            ):
                raise config_error(
                    f"{prefix}.cameras",
                    cam,
                    "allowed: corner, corner2, corner3, corner4, topview, behindGripper, gripperPOV",
                )
    elif env.reward_signal != "dense":
        raise config_error(
            f"{prefix}.reward_signal", env.reward_signal, f"applies to env_type metaworld, not {env.env_type}: set dense"
        )  # fmt: skip
    if env.env_type == "world_model":
        _check_world_model_env(env, prefix)
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


def _check_world_model_env(env: EnvConfig, prefix: str) -> None:
    """Paths of the dynamics model, reset episodes and reward model; visualisation needs chunk rewards."""
    for key, path, needed in (
        ("dynamics_model_config", env.dynamics_model_config, "config.json"),
        ("dynamics_model_image_root", env.dynamics_model_image_root, "index.json"),
        ("reward_model_config", env.reward_model_config, "config.json"),
    ):
        if path is None:
            raise config_error(
                f"{prefix}.{key}", None, f"env_type world_model needs a directory with {needed}"
            )
        if not os.path.isfile(os.path.join(path, needed)):
            raise config_error(f"{prefix}.{key}", path, f"no {needed} in this directory")
    if env.reward_model_ckpt is not None and not os.path.isfile(env.reward_model_ckpt):
        raise config_error(f"{prefix}.reward_model_ckpt", env.reward_model_ckpt, "no such file")
    if env.visualize_wm_pred and not env.chunk_reward:
        raise config_error(
            f"{prefix}.visualize_wm_pred",
            True,
            f"requires {prefix}.chunk_reward=true (prediction videos are made with chunk rewards)",
        )


def _apply_num_group_envs(cfg: JobConfig, ranks: dict[str, int]) -> JobConfig:
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
    base = env.model_dump(exclude={"groups"})
    return [(str(g["name"]), _group_config(base, g)) for g in env.groups]


def _group_config(base: dict[str, Any], group: dict[str, Any]) -> EnvConfig:
    return EnvConfig.model_validate({**base, **{k: v for k, v in group.items() if k != "name"}})


def _check_env_groups(env: EnvConfig, prefix: str, ranks: dict[str, int], stages: int) -> None:
    """Names, shares and keys of ``env.groups``; each group is then checked as an env of its own."""
    base = env.model_dump(exclude={"groups"})
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
        unknown = sorted(set(group) - {"name"} - set(EnvConfig.model_fields))
        if unknown:
            raise config_error(f"{where}.{unknown[0]}", group[unknown[0]], "unknown env key")
        try:
            resolved.append(_group_config(base, group))
        except ValidationError as err:
            line = format_validation_error(err, group, EnvConfig)
            raise ConfigError(line.replace("config error: ", f"config error: {where}.", 1)) from None
    shares = sum(g.num_envs for g in resolved)
    if shares != env.num_envs:
        raise config_error(
            f"{prefix}.num_envs", env.num_envs, f"must equal the sum of the groups' num_envs ({shares})"
        )
    for i, group in enumerate(resolved):
        _check_env(group, f"{prefix}.groups[{i}]", ranks, stages)


def _check_envs(cfg: JobConfig, ranks: dict[str, int]) -> None:
    stages = cfg.rollout.pipeline_stage_num
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


def _all_envs(cfg: JobConfig) -> list[tuple[str, EnvConfig]]:
    """(key, config) of every env the job builds: the train groups (or env.train) and env.eval."""
    train = cfg.env.train
    envs = [(f"env.train.groups[{i}]", g) for i, (_, g) in enumerate(env_groups(train))] or [
        ("env.train", train)
    ]
    return envs + ([("env.eval", cfg.env.eval)] if cfg.env.eval is not None else [])


def _check_batches(cfg: JobConfig, ranks: dict[str, int]) -> None:
    actor, algo = cfg.actor, cfg.algorithm
    if actor.global_batch_size % (actor.micro_batch_size * ranks["actor"]):
        raise config_error(
            "actor.global_batch_size", actor.global_batch_size,
            f"must be a multiple of actor.micro_batch_size x actor ranks = {actor.micro_batch_size} x {ranks['actor']}",
        )  # fmt: skip
    samples = cfg.env.train.num_envs * algo.n_chunk_steps * algo.rollout_epoch
    if samples % actor.global_batch_size:
        raise config_error(
            "actor.global_batch_size", actor.global_batch_size,
            f"must divide the {samples} samples per step (env.train.num_envs x algorithm.n_chunk_steps x "
            "algorithm.rollout_epoch)",
        )  # fmt: skip
    columns = cfg.env.train.num_envs * algo.rollout_epoch
    if columns % ranks["actor"]:
        raise config_error(
            "env.train.num_envs", cfg.env.train.num_envs,
            f"num_envs x rollout_epoch = {columns} must be divisible by the {ranks['actor']} actor ranks",
        )  # fmt: skip
    if algo.adv_type == "grpo" and (columns // ranks["actor"]) % algo.group_size:
        raise config_error(
            "algorithm.group_size", algo.group_size,
            f"must divide the {columns // ranks['actor']} env columns each of the {ranks['actor']} actor ranks "
            "trains on (a GRPO group cannot be split between ranks)",
        )  # fmt: skip


def _check_algorithm(cfg: JobConfig) -> None:
    algo, env = cfg.algorithm, cfg.env.train
    if algo.logprob_type == "chunk_level" and algo.reward_type != "chunk_level":
        raise config_error(
            "algorithm.logprob_type",
            algo.logprob_type,
            "chunk_level requires algorithm.reward_type=chunk_level",
        )
    if algo.adv_type == "grpo":
        if algo.group_size < 2:
            raise config_error("algorithm.group_size", algo.group_size, "grpo needs group_size >= 2")
        if env.group_size != algo.group_size:
            raise config_error(
                "env.train.group_size",
                env.group_size,
                f"must equal algorithm.group_size={algo.group_size} for grpo",
            )
        if not env.use_fixed_reset_state_ids:
            raise config_error(
                "env.train.use_fixed_reset_state_ids",
                False,
                "grpo needs true (a group shares one reset state)",
            )
        if env.auto_reset:
            raise config_error("env.train.auto_reset", True, "grpo scores whole episodes: set false")
    elif not cfg.model.add_value_head:
        raise config_error("model.add_value_head", False, "adv_type gae needs a value head")
    if algo.drop_uniform_groups and algo.adv_type != "grpo":
        raise config_error(
            "algorithm.drop_uniform_groups", True, f"drops GRPO groups: needs adv_type grpo, not {algo.adv_type}"
        )  # fmt: skip
    if algo.shuffle_advantages and algo.reverse_advantages:
        raise config_error(
            "algorithm.reverse_advantages", True, "one advantage ablation at a time: shuffle_advantages is true too"
        )  # fmt: skip
    if algo.imitation_replay_size and algo.imitation_min_advantage is None:
        raise config_error(
            "algorithm.imitation_replay_size", algo.imitation_replay_size,
            "replays the chunks filtered imitation selected: needs algorithm.imitation_min_advantage",
        )  # fmt: skip
    for key, (mode, what) in _ONE_MODE_KEYS.items():
        value = getattr(algo, key)
        if value is not None and algo.train_mode != mode:
            raise config_error(f"algorithm.{key}", value, f"applies to train_mode {mode} ({what}): set null")


# algorithm keys that mean something under one train_mode only: (that mode, what they set there)
_ONE_MODE_KEYS = {
    "target_kl": ("RL", "PPO's KL to the rollout policy"),
    "imitation_min_advantage": ("IL", "which chunks are imitated"),
}


def _check_paths(cfg: JobConfig) -> None:
    resume = cfg.runner.resume_dir
    if resume is not None:
        if not os.path.isdir(resume):
            raise config_error(
                "runner.resume_dir", resume, "no such directory (expected .../checkpoints/global_step_N)"
            )
        from policy_and_value.runner.checkpoint import CheckpointError, verify_checkpoint

        try:
            verify_checkpoint(resume)
        except CheckpointError as err:
            raise config_error("runner.resume_dir", resume, f"not a complete checkpoint: {err}") from None
    if cfg.rollout.model_dir is not None and not os.path.exists(cfg.rollout.model_dir):
        raise config_error("rollout.model_dir", cfg.rollout.model_dir, "no such file or directory")


def _check_pi0(cfg: JobConfig) -> None:
    """``model.pi0`` keys and values (and a saved policy's config) before any weights are built."""
    options = dict(cfg.model.pi0)
    if cfg.model.policy_type not in ("pi0", "pi05"):
        if cfg.algorithm.train_mode == "IL":
            raise config_error(
                "algorithm.train_mode", "IL",
                f"advantage-conditioned imitation needs model.policy_type pi0 or pi05, not {cfg.model.policy_type}",
            )  # fmt: skip
        if cfg.algorithm.offline_data_coef > 0:
            raise config_error(
                "algorithm.offline_data_coef", cfg.algorithm.offline_data_coef,
                f"flow matching on offline chunks needs model.policy_type pi0 or pi05, not {cfg.model.policy_type}",
            )  # fmt: skip
        if cfg.algorithm.policy_config_name is not None:
            raise config_error(
                "algorithm.policy_config_name",
                cfg.algorithm.policy_config_name,
                f"only used with model.policy_type pi0 or pi05, not {cfg.model.policy_type}",
            )
        if options:
            raise config_error(
                "model.pi0",
                options,
                f"only used with model.policy_type pi0 or pi05, not {cfg.model.policy_type}",
            )
        return
    from policy_and_value.models.pi0.configuration_pi0 import PRESETS, Pi0Config, Pi0ConfigError, make_config

    preset = options.pop("preset", "tiny")
    if preset not in PRESETS:
        raise config_error("model.pi0.preset", preset, f"allowed values: {', '.join(sorted(PRESETS))}")
    known = set(Pi0Config.__dataclass_fields__)
    for key, value in options.items():
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"did you mean 'model.pi0.{close[0]}'? " if close else ""
            raise config_error(
                f"model.pi0.{key}", value, f"unknown key; {hint}allowed: preset, {', '.join(sorted(known))}"
            )
    try:
        make_config(preset, **options).validate()
    except Pi0ConfigError as err:
        raise config_error(f"model.pi0.{err.field}", err.value, err.allowed) from None
    except (TypeError, ValueError) as err:
        raise config_error("model.pi0", dict(cfg.model.pi0), str(err).removeprefix("Pi0Config: ")) from None
    model_dir = cfg.rollout.model_dir
    if model_dir is not None and not os.path.isfile(os.path.join(model_dir, "config.json")):
        raise config_error(
            "rollout.model_dir",
            model_dir,
            "a pi0 policy directory needs config.json (written by save_pretrained)",
        )
    saved = Pi0Config.load(os.path.join(model_dir, "config.json")) if model_dir is not None else None
    _check_policy_config_name(cfg, preset, saved)
    _check_train_mode(cfg, saved)


def _check_train_mode(cfg: JobConfig, saved: Any) -> None:
    """``train_mode: IL`` conditions the prompt on advantage bins, so the policy must read them
    (``saved``: the config of the policy in rollout.model_dir, if any), unless
    ``imitation_min_advantage`` selects what is imitated (filtered imitation needs no bins)."""
    if cfg.algorithm.train_mode != "IL" or cfg.algorithm.imitation_min_advantage is not None:
        return
    conditioned = cfg.model.pi0.get("with_advantage_condition")
    if conditioned is None and saved is not None:
        conditioned = saved.with_advantage_condition
    if not conditioned:
        raise config_error(
            "algorithm.train_mode", "IL",
            "needs model.pi0.with_advantage_condition=true (the prompt carries the advantage bin) or "
            "algorithm.imitation_min_advantage (filtered imitation)",
        )  # fmt: skip


def _check_offline_data(cfg: JobConfig) -> None:
    """``algorithm.offline_data_coef`` > 0 anchors the policy to recorded episodes: they must cover
    every train task and record the env's cameras."""
    algo, env = cfg.algorithm, cfg.env.train
    if algo.offline_data_coef == 0:
        return
    path = algo.offline_data_path
    if path is None:
        raise config_error(
            "algorithm.offline_data_coef", algo.offline_data_coef,
            "needs algorithm.offline_data_path (episodes written by python -m toolkits.collect_episodes)",
        )  # fmt: skip
    dataset = check_episode_data(path, env.tasks, "algorithm.offline_data_path", "env.train.tasks")
    recorded = list(dataset.info.get("cameras", []))
    missing = [c for c in env.cameras if c not in recorded]
    if missing:
        raise config_error(
            "algorithm.offline_data_path", path,
            f"records cameras {recorded}, not {missing} of env.train.cameras={env.cameras}",
        )  # fmt: skip


def _check_policy_config_name(cfg: JobConfig, preset: str, saved: Any) -> None:
    """``algorithm.policy_config_name`` names the preset; the policy in rollout.model_dir (its config
    ``saved``) must have its layers."""
    from policy_and_value.models.pi0.configuration_pi0 import PRESETS, architecture_differences, make_config

    name = cfg.algorithm.policy_config_name
    if name is None:
        return
    if name not in PRESETS:
        raise config_error(
            "algorithm.policy_config_name", name, f"allowed values: {', '.join(sorted(PRESETS))}"
        )
    if "preset" in cfg.model.pi0 and preset != name:
        raise config_error("algorithm.policy_config_name", name, f"but model.pi0.preset is {preset!r}")
    if saved is None:
        return
    diffs = architecture_differences(make_config(name), saved)
    if diffs:
        raise config_error(
            "algorithm.policy_config_name", name,
            f"rollout.model_dir={cfg.rollout.model_dir} holds another architecture ({name} -> saved): {'; '.join(diffs)}",
        )  # fmt: skip


def _check_backends(cfg: JobConfig) -> None:
    for backend in cfg.runner.logger.logger_backends:
        if backend != "tensorboard" and importlib.util.find_spec(backend) is None:
            raise config_error(
                "runner.logger.logger_backends",
                backend,
                f"{backend} is not installed (.venv/bin/pip install {backend})",
            )
