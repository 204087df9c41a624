"""Checks of the folders a job reads: recorded episodes (offline anchor data), the checkpoint to
resume from, and the logger backends' packages."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from policy_and_value.config.errors import config_error
from policy_and_value.config.schema import JobConfig

# The folders shipped configs read that a script builds instead of the repo shipping them, and that script.
BUILT_BY_SCRIPT = {
    "data/outcome_start20": "DEMOS=20 DEMOS_ONLY=1 bash scripts/prepare_outcome_start.sh data/outcome_start20",
    "data/outcome_start20_both": "DEMOS=20 DEMOS_ONLY=1 REDRAW_CONFIG=rl_metaworld_dense_wm_critic_20demo "
    "bash scripts/prepare_outcome_start.sh data/outcome_start20_both",
    "logs/libero_loop": "bash scripts/libero_loop.sh",
    "data/coevolution20_both": "bash scripts/prepare_coevolution_data.sh data/coevolution20_both",
}


def build_hint(path: str) -> str:
    """`` (build it with: COMMAND)`` when a script of this repo builds ``path`` (shipped configs point there), else
    ``""``: the end of a missing-folder error."""
    norm = os.path.normpath(path)
    for folder, command in BUILT_BY_SCRIPT.items():
        if norm == folder or norm.startswith(folder + os.sep):
            return f" (build it with: {command})"
    return ""


def check_episode_data(
    path: str, tasks: list[str] | None, path_key: str = "data.path", tasks_key: str = "data.tasks"
) -> Any:
    """``path`` (the key ``path_key``) holds collected episodes with every task of ``tasks`` (the key
    ``tasks_key``); returns the opened ``EpisodeDataset`` (every user of episode data starts with this)."""
    from toolkits.episodes import EpisodeDataset

    if not os.path.isfile(os.path.join(path, "index.json")):
        raise config_error(
            path_key, path,
            "no index.json here" + (build_hint(path) or " (write one with python -m toolkits.collect_episodes)"),
        )  # fmt: skip
    dataset = EpisodeDataset(path)
    missing = [t for t in tasks or [] if t not in dataset.tasks]
    if missing:
        raise config_error(tasks_key, tasks, f"{missing} not in the dataset {path}; it has {dataset.tasks}")
    return dataset


def check_paths(cfg: JobConfig) -> None:
    """The checkpoint to resume from is complete (every file named if not) and ``rollout.model_dir`` exists."""
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
        path = cfg.rollout.model_dir
        raise config_error("rollout.model_dir", path, "no such file or directory" + build_hint(path))


def check_offline_data(cfg: JobConfig) -> None:
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


def check_backends(cfg: JobConfig) -> None:
    """Each logger backend asked for has its package installed."""
    for backend in cfg.runner.logger.logger_backends:
        if backend != "tensorboard" and importlib.util.find_spec(backend) is None:
            raise config_error(
                "runner.logger.logger_backends",
                backend,
                f"{backend} is not installed (.venv/bin/pip install {backend})",
            )


def check_coevolution(cfg: JobConfig) -> None:
    """Co-evolution needs one world-model env with a state model (alone or beside real env groups), the
    episodes it was trained on, a Meta-World eval env (whose tasks and views the real rollouts use) and a pi0
    policy (exported for those rollouts)."""
    from policy_and_value.config.env_checks import world_model_groups

    co, train = cfg.coevolution, cfg.env.train
    if co.rounds == 0:
        return
    worlds = world_model_groups(train)
    world = worlds[0] if len(worlds) == 1 else train
    # a group's own state or dynamics model would never see the rounds' refits (they are set on env.train)
    models = ("state_model_config", "dynamics_model_config")
    own = next(
        ((f"env.train.groups[{i}].{k}", g[k]) for i, g in enumerate(train.groups) for k in models if k in g),
        None,
    )
    needs = [
        ("env.train.env_type", train.env_type, len(worlds) == 1,
         "coevolution.rounds > 0 trains in one world-model env: env_type world_model, or one such env group "
         f"beside real ones (here {len(worlds)})"),
        (*(own or ("env.train.groups", None)), own is None,
         "each round sets its refitted models on env.train, which the world-model group inherits: set them there"),
        ("env.train.state_model_config", world.state_model_config, world.state_model_config is not None,
         "coevolution refits the state model: set a state model directory"),
        ("env.eval.env_type", cfg.env.eval.env_type if cfg.env.eval else None,
         cfg.env.eval is not None and cfg.env.eval.env_type == "metaworld",
         "coevolution's real rollouts use a metaworld eval env's tasks and views"),
        ("model.policy_type", cfg.model.policy_type, cfg.model.policy_type in ("pi0", "pi05"),
         "coevolution exports the policy for its real rollouts: pi0 or pi05"),
        ("coevolution.real_episodes_per_task", co.real_episodes_per_task,
         co.real_episodes_per_task + co.plans_per_task > 0,
         "> 0 unless coevolution.plans_per_task > 0 (a refit needs new real episodes)"),
        ("env.train.tasks", list(world.tasks),
         co.plans_per_task == 0 or cfg.env.eval is None or list(world.tasks) == list(cfg.env.eval.tasks),
         f"env.eval.tasks in the same order with coevolution.plans_per_task > 0 (each plan is imagined in "
         f"env.train's world model and replayed in env.eval's simulator): {list(cfg.env.eval.tasks) if cfg.env.eval else []}"),
    ]  # fmt: skip
    for key, value, ok, allowed in needs:
        if not ok:
            raise config_error(key, value, allowed)
    data = co.state_model_data
    if data is None:
        raise config_error(
            "coevolution.state_model_data",
            data,
            "the episodes the state model was trained on (a dataset with index.json)",
        )
    from world_models.latent_cache import check_cache_dir

    check_cache_dir("coevolution.latent_cache", co.latent_cache)  # before round 1's RL, not at its refit
    # each refit trains on these episodes with the world-model env's tasks: a missing one would fail after round 1's RL
    check_episode_data(data, list(world.tasks), "coevolution.state_model_data", "env.train.tasks")
    if cfg.runner.resume_dir:  # a checkpoint that cannot continue this log dir's rounds
        from policy_and_value.runner.coevolution import finished_rounds

        finished_rounds(cfg)
