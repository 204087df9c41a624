"""Typed config of the improver (``configs/online/*.yaml``); validated, with its paths checked, before any work."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field

from toolkits.base.errors import ConfigError, config_error
from toolkits.base.schema import Strict


class GateConfig(Strict):
    """What a candidate must show against the current version before it is published."""

    # its flow-matching loss on held-out recorded episodes at most this multiple of the current version's
    max_heldout_loss_ratio: float = Field(1.0, gt=0.0)
    # in simulation: Meta-World success on layouts never recorded (both versions on the same layouts and noise
    # draws); null: no simulator gate (a robot has none)
    eval_tasks: list[str] | None = None
    eval_episodes: int = Field(10, ge=1)  # per task
    eval_layout_seed: int = 1  # 50 layouts per task other than those served (layout_seed 0)
    eval_max_episode_steps: int = Field(150, ge=1)
    min_success_gain: float = 0.0  # the candidate's mean success minus the current version's, at least
    # recipe imagination: the candidate's imagined success from held-out recorded starts minus the current
    # version's (the same starts and seeds, in the refitted world model), at least; null: reported, not gated
    min_imagined_gain: float | None = 0.0


class ImaginationConfig(Strict):
    """Recipe ``imagination``: refit the observation world model warm on the recorded episodes, then RL in it (in
    simulation, RL in a model of the simulator's state as it is)."""

    # an RL job whose env.train is a state model's world: an observation model (rl_release), or in simulation one on
    # the simulator's state (e.g. rl_metaworld_wm_pessimistic_critic_20demo, with refit_steps 0)
    rl_config: str = "rl_release"
    rl_overrides: list[str] = Field(default_factory=lambda: ["runner.max_steps=10"])
    # the world model of the first round (null: rl_config's env.train.state_model_config); later rounds start from
    # the last round's refit
    world_model: str | None = None
    refit_steps: int = Field(300, ge=0)  # warm refit on every recorded training episode so far (0: no refit)
    eval_episodes: int = Field(12, ge=1)  # imagined episodes from held-out recorded starts, for the gate
    # > 0: each PPO micro batch adds anchor_coef x the flow-matching loss on the recorded training episodes (the
    # current version's own actions: a trust region where imagination is wrong); 0: RL alone
    anchor_coef: float = Field(0.0, ge=0.0)


class TrainResources(Strict):
    """What each of a round's training steps (imitation, the world model's refit) holds as a Ray task."""

    num_cpus: int | None = Field(None, ge=1)  # null: every CPU of the Ray cluster
    num_gpus: float = Field(0.0, ge=0.0)


class ImproverConfig(Strict):
    registry: str  # a policy registry (worldrl registry init) with a current version
    recordings: str  # the server's --record directory
    work_dir: str  # the improver's state, rounds and TensorBoard logs
    reward_model: str | None = (
        None  # a progress model: advantage-conditioned imitation; null: imitate successes
    )
    label_horizon: int = Field(10, ge=1)
    min_new_episodes: int = Field(20, ge=1)  # with a known outcome, before a round starts
    holdout_every: int = Field(5, ge=2)  # every k-th new episode is held out for the gate, never trained on
    # imitation: train_sft on the recordings; imagination: refit the world model on them, RL in it
    method: Literal["imitation", "imagination"] = "imitation"
    sft_config: str = "offline/sft_pi0_tiny"
    sft_overrides: list[str] = Field(default_factory=lambda: ["train.max_steps=300", "train.warmup_steps=10"])
    imagination: ImaginationConfig = Field(default_factory=ImaginationConfig)
    train_resources: TrainResources = Field(default_factory=TrainResources)
    gate: GateConfig = Field(default_factory=GateConfig)
    poll_seconds: float = Field(10.0, gt=0.0)
    max_rounds: int | None = Field(None, ge=1)  # stop after this many rounds (null: run until stopped)
    once: bool = False  # one check: a round if enough episodes wait, then exit


def check_improver(cfg: ImproverConfig) -> None:
    """Paths and names, before any work: one ``config error`` line naming the key."""
    from policy_and_value.envs.metaworld_tasks import MT50_TASKS
    from toolkits.deploy.registry import PolicyRegistry, RegistryError

    try:
        registry = PolicyRegistry(cfg.registry)
        registry.current_path()
    except RegistryError as err:
        raise config_error("registry", cfg.registry, str(err).split(": ", 1)[-1]) from None
    if not os.path.isfile(os.path.join(cfg.recordings, "index.json")):
        raise config_error(
            "recordings", cfg.recordings, "no index.json (serve with --record DIR, then point here)"
        )
    if cfg.reward_model is not None and not os.path.isfile(os.path.join(cfg.reward_model, "config.json")):
        raise config_error("reward_model", cfg.reward_model, "no config.json in this directory")
    unknown = [t for t in cfg.gate.eval_tasks or [] if t not in MT50_TASKS]
    if unknown:
        raise config_error(
            "gate.eval_tasks", unknown, "not Meta-World tasks (MT50 names, e.g. drawer-open-v3)"
        )
    try:
        from toolkits.base.compose import compose_config

        compose_config(cfg.sft_config, [])
    except ConfigError as err:
        raise config_error("sft_config", cfg.sft_config, str(err)) from None
