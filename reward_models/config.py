"""Typed config of reward-model training (``python -m reward_models.train``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from toolkits.base.schema import Strict
from toolkits.base.setting import Setting


class RewardDataConfig(Strict):
    path: str  # episodes written by python -m toolkits.collect_episodes (with failures: --fail-fraction)
    tasks: list[str] | None = None
    cameras: list[str] | None = None  # None: every recorded view
    holdout_fraction: float = Field(0.2, ge=0.0, lt=1.0)


class RewardNetConfig(Strict):
    kind: Literal["progress", "success"] = "progress"
    image_size: int = Field(64, ge=8)
    channels: list[int] = Field(default_factory=lambda: [16, 32, 64], min_length=1)
    hidden: int = Field(128, ge=1)
    prompt_dim: int = Field(32, ge=1)


class RewardTrainConfig(Strict):
    max_steps: int = Field(2000, ge=1)
    batch_size: int = Field(64, ge=1)
    lr: float = Field(1e-3, gt=0.0)
    weight_decay: float = Field(1e-4, ge=0.0)
    gamma: float = Field(0.98, gt=0.0, le=1.0)  # TD discount for failed episodes
    failure_weight: float = Field(1.0, ge=0.0)  # weight of failed-episode frames in the loss
    target_ema: float = Field(0.99, ge=0.0, lt=1.0)  # target network for TD targets
    random_shift: int = Field(4, ge=0)
    log_interval: int = Field(100, ge=1)
    save_interval: int = Field(1000, ge=1)
    seed: int = 0


class RewardModelJob(Strict):
    data: RewardDataConfig
    # what it may read (frames and success: both settings): privileged, or observation_only (what a robot records; docs/configuration.md, "setting")
    setting: Setting = "privileged"
    model: RewardNetConfig = Field(default_factory=RewardNetConfig)
    train: RewardTrainConfig = Field(default_factory=RewardTrainConfig)
    output_dir: str = "logs/reward_model"
