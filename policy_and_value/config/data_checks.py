"""Checks of the folders a job reads: recorded episodes (offline anchor data), the checkpoint to
resume from, and the logger backends' packages."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from policy_and_value.config.schema import JobConfig
from toolkits.base.errors import config_error

# The folders shipped configs read that a recipe builds instead of the repo shipping them, and that recipe.
BUILT_BY_RECIPE = {
    "data/outcome_start20": "worldrl recipe outcome-start --out data/outcome_start20 --demos 20 --demos-only",
    "data/outcome_start20_both": "worldrl recipe outcome-start --out data/outcome_start20_both --demos 20 --demos-only "
    "--redraw-config rl_metaworld_dense_wm_critic_20demo",
    "logs/libero_loop": "worldrl recipe libero-loop --out logs/libero_loop",
    "data/libero_obs": "worldrl recipe libero-observation-model --out data/libero_obs",
    "data/coevolution20_both": "worldrl recipe coevolution-data --out data/coevolution20_both",
    "data/obs_start20": "worldrl recipe outcome-start --out data/obs_start20 --demos 20 --state-type proprio",
    "data/obs_wm": "worldrl recipe observation-model --out data/obs_wm",
    "data/obs2_start20": "worldrl recipe outcome-start --out data/obs2_start20 --demos 20 --state-type proprio "
    "--tasks drawer-open-v3 button-press-topdown-v3 door-open-v3",
    "data/obs2b_start20": "worldrl recipe outcome-start --out data/obs2b_start20 --demos 20 --state-type proprio "
    "--tasks drawer-open-v3 button-press-topdown-v3 door-open-v3 --redraw-config rl_metaworld_obs2_wm_value",
    "data/obs2_wm": "worldrl recipe observation-model --out data/obs2_wm --policy-dir data/obs2_start20/sft/policy "
    "--demos data/obs2_start20/demos --tasks drawer-open-v3 button-press-topdown-v3 door-open-v3",
    "data/obs2_wmB": "worldrl recipe observation-model --out data/obs2_wmB --policy-dir data/obs2_start20/sft/policy "
    "--demos data/obs2_start20/demos --tasks drawer-open-v3 button-press-topdown-v3 door-open-v3 --encoder learned "
    "--value-head",
}


def build_hint(path: str) -> str:
    """`` (build it with: COMMAND)`` when a recipe of this repo builds ``path`` (shipped configs point there), else
    ``""``: the end of a missing-folder error."""
    norm = os.path.normpath(path)
    for folder, command in BUILT_BY_RECIPE.items():
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
        from toolkits.base.checkpoint import CheckpointError, verify_checkpoint

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
