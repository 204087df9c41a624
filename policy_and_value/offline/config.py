"""Typed config of imitation (SFT) training; validated before any data or model is loaded."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from policy_and_value.config.schema import ModelConfig
from toolkits.base.schema import Strict
from toolkits.base.setting import Setting


class DataConfig(Strict):
    path: str  # a dataset written by python -m toolkits.collect_episodes
    tasks: list[str] | None = None  # None: every task in the dataset
    success_only: bool = True  # imitate only episodes that reached success
    state_type: Literal["full", "proprio"] = "full"  # must match the env the policy will run in
    cameras: list[str] | None = None  # None: every view the dataset recorded, in its order
    holdout_fraction: float = Field(0.1, ge=0.0, lt=1.0)  # episodes kept out for the validation loss
    # advantage-conditioned imitation (model.pi0.with_advantage_condition, labelled data): share of
    # samples trained with the unconditioned prompt, so the policy also works without an advantage
    # (as algorithm.advantage_dropout in train_mode IL); setting it for an unconditioned policy is an error
    advantage_dropout: float = Field(0.1, ge=0.0, le=1.0)


class AugmentConfig(Strict):
    random_shift: int = Field(4, ge=0)  # pad by this many pixels (edge) and crop back at a random offset
    brightness: float = Field(0.1, ge=0.0, le=1.0)  # +- fraction
    contrast: float = Field(0.1, ge=0.0, le=1.0)  # +- fraction
    state_noise: float = Field(0.0, ge=0.0)  # std of Gaussian noise on the normalised state


class TrainConfig(Strict):
    max_steps: int = Field(2000, ge=1)
    batch_size: int = Field(32, ge=1)
    lr: float = Field(3e-4, gt=0.0)
    weight_decay: float = Field(1e-4, ge=0.0)
    warmup_steps: int = Field(100, ge=0)
    min_lr_ratio: float = Field(0.1, ge=0.0, le=1.0)
    clip_grad: float | None = Field(1.0, gt=0.0)
    log_interval: int = Field(50, ge=1)
    save_interval: int = Field(500, ge=1)
    seed: int = 0


class SFTConfig(Strict):
    """``python -m policy_and_value.offline.train_sft [CONFIG] [key=value ...]``."""

    data: DataConfig
    # what it may read: privileged, or observation_only (what a robot records; docs/configuration.md, "setting")
    setting: Setting = "privileged"
    model: ModelConfig = Field(default_factory=lambda: ModelConfig(policy_type="pi0", add_value_head=False))
    norm_mode: Literal["quantile", "mean_std", "none"] = "quantile"
    # data: statistics of the training data; init: keep init_model_dir's (finetuning a deployed policy on a few
    # new episodes, whose statistics would move every input the policy learned on)
    norm_stats_from: Literal["data", "init"] = "data"
    augment: AugmentConfig = Field(default_factory=AugmentConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    output_dir: str = "logs/sft"
    init_model_dir: str | None = None  # start from a saved policy directory instead of fresh weights
    resume: bool = True  # continue from output_dir/checkpoints/latest when it exists
