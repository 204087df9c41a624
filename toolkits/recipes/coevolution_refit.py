"""A co-evolution round's warm-started refit of the world-model env's state model (and optionally its dynamics
model's denoiser) on the episodes so far: the state-model job it trains and the refit itself."""

from __future__ import annotations

import os
from typing import Any

from policy_and_value.config.env_checks import world_model_groups
from policy_and_value.config.schema import JobConfig
from toolkits.base.setting import OBSERVATION_ONLY

# what a warm refit keeps of the saved state model's config: its chunks, heads and frame code
KEPT = ("action_chunk", "reward_head", "latent_components", "latent_encoder", "value_head", "value_discount")


def refit_job(
    cfg: JobConfig, data: str, state_model: str, dynamics: str | None, out: str, rounds_data: list[str]
) -> Any:
    """The ``StateModelJob`` that refits ``state_model`` warm on ``data`` into ``<out>/state_model``
    (``coevolution.refit_focus`` of each batch from the episodes merged from ``rounds_data``). In the
    observation-only setting it learns success from each episode's end, as an observation model is first trained."""
    from world_models.config import StateModelJob
    from world_models.state_model import StateModelConfig

    co, train = cfg.coevolution, world_model_groups(cfg.env.train)[0]
    saved = StateModelConfig.load(os.path.join(state_model, "config.json"))
    labels = "episode_end" if cfg.setting == OBSERVATION_ONLY else "steps"
    return StateModelJob.model_validate({
        "setting": cfg.setting, "model": {k: getattr(saved, k) for k in KEPT},
        "data": {"path": data, "tasks": list(train.tasks), "state_type": train.state_type},
        "train": {"steps": co.refit_steps, "seed": cfg.runner.seed, "success_labels": labels,
                  "focus_sources": rounds_data if co.refit_focus else [], "focus_fraction": co.refit_focus},
        "render": {"dynamics_model_dir": dynamics if saved.latent_shape else None, "steps": co.refit_steps,
                   "latent_cache": co.latent_cache or os.path.join(os.path.dirname(out), "latent_cache")},
        "init_model_dir": state_model, "output_dir": os.path.join(out, "state_model"),
    })  # fmt: skip


def refit(
    cfg: JobConfig, data: str, state_model: str, dynamics: str, out: str, rounds_data: list[str]
) -> tuple[str, str]:
    """Warm-started refits on ``data`` (``refit_job``'s, then ``coevolution.dynamics_refit_steps`` of the dynamics
    model's); returns the new state model and dynamics model directories."""
    from world_models.config import WMDataConfig, WMTrainConfig, WorldModelJob
    from world_models.train import train_world_model
    from world_models.train_state_model import train_state_model

    co, train = cfg.coevolution, world_model_groups(cfg.env.train)[0]
    job = refit_job(cfg, data, state_model, dynamics, out, rounds_data)
    new_state = str(train_state_model(job, log=lambda *_: None))
    if co.dynamics_refit_steps > 0:
        wm_job = WorldModelJob(
            setting=cfg.setting,
            data=WMDataConfig(path=data, tasks=list(train.tasks), state_type=train.state_type),
            train=WMTrainConfig(vae_steps=0, dynamics_steps=co.dynamics_refit_steps, seed=cfg.runner.seed),
            init_model_dir=dynamics, output_dir=os.path.join(out, "dynamics_model"),
        )  # fmt: skip
        dynamics = str(train_world_model(wm_job, log=lambda *_: None))
    return new_state, dynamics
