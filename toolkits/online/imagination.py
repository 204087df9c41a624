"""The improver's recipe ``imagination``: refit the observation world model warm on what the server recorded, then
improve the current version with the RL job ``imagination.rl_config`` inside it (both on Ray, no simulator). In
simulation the job may train in a model of the simulator's state instead, as it is (``refit_steps`` 0: the recordings
hold no shaped reward to refit its heads on).

Imagined episodes start from the recorded training episodes' first frames and proprioception. The RL job's
evaluation is the same world model started from the held-out recorded episodes (one env a start, the same starts
and seeds before and after): ``imagined_success_current`` is the current version's imagined success there,
``imagined_success_candidate`` the candidate's after the job's updates; the gate compares them.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import fields
from pathlib import Path
from typing import Any

from toolkits.online.config import ImproverConfig


class NothingToImagine(ValueError):
    """The round's recordings give imagination no start (no task the world model knows): the round is skipped."""


def rl_job(
    cfg: ImproverConfig, current: Path, world_model: str | None, train: str, tasks: list[str] | None = None
) -> Any:
    """The RL job of a round, composed and validated: warm from ``current``, imagining in ``world_model`` (None: the
    job's own) from the recorded episodes ``train`` of ``tasks`` (None: the job's); the user's ``rl_overrides``
    last."""
    from policy_and_value.config.load import load_config

    im = cfg.imagination
    overrides = [f"rollout.model_dir={current}", f"env.train.dynamics_model_image_root={train}"]
    if tasks is not None:
        overrides.append(f"env.train.tasks=[{','.join(tasks)}]")
    if world_model is not None:
        overrides.append(f"env.train.state_model_config={world_model}")
    if im.anchor_coef > 0:
        overrides += [f"algorithm.offline_data_path={train}", f"algorithm.offline_data_coef={im.anchor_coef}"]
    return load_config(im.rl_config, [*overrides, *im.rl_overrides])


def with_imagined_eval(job: Any, heldout: str, tasks: list[str], episodes: int, log_path: str) -> Any:
    """``job`` evaluated in its own imagination from the recorded episodes ``heldout`` of ``tasks`` (one env a start)
    before its first and after its last step, saved once at its end, logged under ``log_path``."""
    from policy_and_value.config.validate import validate_config

    train = job.env.train
    imagine = train.model_copy(update={"dynamics_model_image_root": heldout, "tasks": tasks, "num_envs": episodes,
                                       "group_size": 1, "visualize_wm_pred": False})  # fmt: skip
    steps = job.runner.max_steps
    logger = job.runner.logger.model_copy(update={"log_path": log_path, "experiment_name": "rl"})
    runner = job.runner.model_copy(
        update={"val_check_interval": steps, "save_interval": steps, "logger": logger, "progress_bar": False}
    )
    env = job.env.model_copy(update={"eval": imagine, "eval_episodes": episodes})
    return validate_config(job.model_copy(update={"env": env, "runner": runner}).model_dump(mode="json"))


def known_tasks(dataset: str, world_model: str) -> list[str]:
    """The tasks of ``dataset``'s episodes whose instruction ``world_model`` knows, sorted."""
    from toolkits.episodes.format import read_index
    from world_models.state_model import StateModelConfig

    prompts = set(StateModelConfig.load(os.path.join(world_model, "config.json")).prompts)
    return sorted({e["task"] for e in read_index(os.path.join(dataset, "index.json"))["episodes"]
                   if e["prompt"] in prompts})  # fmt: skip


def refit_world_model(
    cfg: ImproverConfig, init: str, data: str, tasks: list[str], vae: str, out: Path
) -> str:
    """``init`` (an observation model) trained ``imagination.refit_steps`` more steps on the recorded episodes
    ``data`` of ``tasks``, as a robot records them (proprioception, frames, the episodes' outcomes); its directory."""
    from world_models.config import StateModelJob, StateNetConfig
    from world_models.state_model import StateModelConfig
    from world_models.train_state_model import train_state_model

    steps = cfg.imagination.refit_steps
    saved = StateModelConfig.load(
        os.path.join(init, "config.json")
    )  # the job's model section, as init was built
    model = {f.name: getattr(saved, f.name) for f in fields(saved) if f.name in StateNetConfig.model_fields}
    job = StateModelJob.model_validate({
        "data": {"path": data, "tasks": tasks, "state_type": "proprio"}, "setting": "observation_only",
        "model": model, "train": {"steps": steps, "success_labels": "episode_end", "warmup_steps": min(100, steps)},
        "render": {"dynamics_model_dir": vae if saved.latent_shape else None, "steps": steps,
                   "latent_cache": str(out.parent / "latent_cache")},
        "init_model_dir": init, "output_dir": str(out),
    })  # fmt: skip
    return str(train_state_model(job, log=lambda *_: None))


def imagined_round(
    cfg: ImproverConfig,
    current: Path,
    where: Path,
    train: str,
    heldout: str,
    world_model: str | None,
    log=print,
) -> tuple[Path, dict[str, Any], str]:
    """Refit, then RL in imagination from ``current``: (the candidate policy directory, the imagined gate metrics,
    the world model it trained in)."""
    from policy_and_value.runner.runner import run_job
    from toolkits.ckpt_convertor.export_policy import export_policy
    from toolkits.online.ray_tasks import ray_session, run_on_ray

    base = rl_job(cfg, current, world_model, train)  # the job's own models
    init = world_model or base.env.train.state_model_config
    tasks = known_tasks(train, init)
    if not tasks:
        raise NothingToImagine(f"no recorded training episode of a task the world model {init} knows")
    with ray_session():  # one Ray for the refit and the RL job
        model = init
        if cfg.imagination.refit_steps > 0:
            model = run_on_ray(refit_world_model, cfg, init, train, tasks, base.env.train.dynamics_model_config,
                               where / "world_model", **cfg.train_resources.model_dump())  # fmt: skip
            log(f"improver: world model refitted on {train} ({cfg.imagination.refit_steps} steps) -> {model}")
        starts, start_tasks = heldout, known_tasks(heldout, model)
        if not start_tasks:  # no held-out episode of a known task yet: the training starts
            starts, start_tasks = train, tasks
        job = with_imagined_eval(rl_job(cfg, current, model, train, tasks), starts, start_tasks,
                                 cfg.imagination.eval_episodes, str(where))  # fmt: skip
        shutil.rmtree(where / "rl", ignore_errors=True)  # what a killed improver left of this round's RL
        runner = run_job(job)
    candidate = export_policy(runner.saved[-1], where / "candidate")
    metrics = {
        "imagined_success_current": float(runner.first_eval["eval/success_once"]),
        "imagined_success_candidate": float(runner.last_eval["eval/success_once"]),
        "imagined_from_heldout": float(starts == heldout),
        "rl_steps": float(runner.global_step),
    }
    metrics["imagined_gain"] = metrics["imagined_success_candidate"] - metrics["imagined_success_current"]
    return candidate, metrics, model


def check_imagination(cfg: ImproverConfig, current: Path) -> None:
    """The RL job composed and validated with the user's overrides, its world model present: one ``config error``
    line naming the key, before any work."""
    from toolkits.base.errors import ConfigError, config_error

    given = cfg.imagination.world_model
    if given is not None and not os.path.isfile(os.path.join(given, "config.json")):
        raise config_error("imagination.world_model", given, "no config.json in this directory")
    try:
        job = rl_job(cfg, current, cfg.imagination.world_model, cfg.recordings)
    except ConfigError as err:
        raise ConfigError(f"{err} (imagination.rl_config / imagination.rl_overrides)") from None
    if job.env.train.env_type != "world_model" or not job.env.train.state_model_config:
        raise config_error("imagination.rl_config", cfg.imagination.rl_config,
                           "an RL job that trains in a state model's imagination (e.g. rl_release)")  # fmt: skip
    if cfg.imagination.refit_steps > 0 and job.setting != "observation_only":
        raise config_error("imagination.refit_steps", cfg.imagination.refit_steps,
                           f"the refit trains on what a robot records, and {cfg.imagination.rl_config} reads the "
                           "simulator's state (its setting is not observation_only): set 0 to improve in its model as "
                           "it is")  # fmt: skip
