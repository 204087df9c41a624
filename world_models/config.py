"""Typed configs of world-model training: the dynamics model (``python -m world_models.train``) and the
state model (``python -m world_models.train_state_model``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from toolkits.base.schema import Strict
from toolkits.base.setting import Setting


class WMDataConfig(Strict):
    path: str  # episodes written by python -m toolkits.collect_episodes
    tasks: list[str] | None = None
    state_type: Literal["full", "proprio"] = "full"
    holdout_fraction: float = Field(0.1, ge=0.0, lt=1.0)


class WMTrainConfig(Strict):
    vae_steps: int = Field(1000, ge=0)  # stage 1: the video VAE alone
    dynamics_steps: int = Field(3000, ge=0)  # stage 2: the denoiser (VAE frozen)
    batch_size: int = Field(16, ge=1)
    vae_lr: float = Field(1e-3, gt=0.0)
    lr: float = Field(3e-4, gt=0.0)
    weight_decay: float = Field(1e-4, ge=0.0)
    warmup_steps: int = Field(100, ge=0)
    clip_grad: float = Field(1.0, gt=0.0)
    log_interval: int = Field(100, ge=1)
    save_interval: int = Field(1000, ge=1)
    seed: int = 0
    mixed_precision: Literal["no", "bf16", "fp16"] = "no"  # accelerate's setting (GPU)


class WorldModelJob(Strict):
    data: WMDataConfig
    # what it may read: privileged, or observation_only (what a robot records; docs/configuration.md, "setting")
    setting: Setting = "privileged"
    preset: str = "tiny"  # DynamicsModelConfig preset
    model: dict[str, Any] = Field(default_factory=dict)  # DynamicsModelConfig field overrides
    train: WMTrainConfig = Field(default_factory=WMTrainConfig)
    output_dir: str = "logs/world_model"
    init_model_dir: str | None = None  # start from a saved dynamics model directory
    resume: bool = True  # continue from output_dir/checkpoints/latest


class StateNetConfig(Strict):
    action_chunk: int = Field(4, ge=1)  # actions per predicted chunk (the env's num_action_chunks)
    ensemble_size: int = Field(5, ge=1)  # members: their disagreement flags hallucinated rollouts
    hidden: int = Field(256, ge=1)
    layers: int = Field(3, ge=1)
    reward_head: bool = True  # also learn the data's reward from the state (a shaped reward in imagination)
    # > 0: an observation model (what a robot records): its state is the proprioception and this many principal
    # components of the cameras' VAE latents (render.dynamics_model_dir's VAE), instead of the simulator's state
    latent_components: int = Field(0, ge=0)
    # how those numbers are made: pca (design A: principal components, frames linear in them) or learned (design B:
    # an encoder and decoder of the latents trained with the dynamics; world_models/latent_codec.py)
    latent_encoder: Literal["pca", "learned"] = "pca"
    codec_width: int = Field(32, ge=1)  # design B: channels of its encoder's and decoder's convolutions
    # a value head: the chance that the episode succeeds from a state, discounted by value_discount per action to its
    # end, learned from the episodes' outcomes alone (env reward_mode value: a dense imagined reward)
    value_head: bool = False
    value_discount: float = Field(0.98, gt=0.0, le=1.0)


class StateTrainConfig(Strict):
    steps: int = Field(
        3000, ge=0
    )  # 0 with init_model_dir: keep its ensemble (e.g. to train only the renderer)
    batch_size: int = Field(128, ge=1)  # windows per member per step
    horizon: int = Field(8, ge=1)  # chunks rolled open loop per window (trained through its own predictions)
    lr: float = Field(1e-3, gt=0.0)
    weight_decay: float = Field(1e-4, ge=0.0)
    warmup_steps: int = Field(100, ge=0)
    success_weight: float = Field(1.0, ge=0.0)  # weight of the success classifier's loss
    reward_weight: float = Field(1.0, ge=0.0)  # weight of the reward head's loss (model.reward_head)
    # all: every part learns; reward_head (needs init_model_dir): only the reward head, added to the
    # initial model if it has none; its states, success classifier and renderer stay as they are
    parts: Literal["all", "reward_head"] = "all"
    # steps: the simulator's success flag after every action; episode_end: the episode's outcome alone, on its last
    # frame (what a robot's operator records; the observation-only setting's)
    success_labels: Literal["steps", "episode_end"] = "steps"
    # the episode datasets (as the merged data's merged_from names them) whose windows make focus_fraction of
    # every batch, the rest drawn from all windows: a warm refit that learns from a few new episodes among many
    focus_sources: list[str] = Field(default_factory=list)
    focus_fraction: float = Field(0.0, ge=0.0, lt=1.0)
    # design B (model.latent_encoder=learned): weight of the code's consistency with the encoding of the real frames
    # at each chunk's end, and of the decoder's error on the real and the predicted codes
    code_weight: float = Field(10.0, ge=0.0)
    decode_weight: float = Field(1.0, ge=0.0)
    log_interval: int = Field(250, ge=1)
    seed: int = 0
    # auto: the GPU when one is visible, else the CPU; the model is written the same either way
    device: Literal["auto", "cpu", "cuda"] = "auto"


class StateRenderConfig(Strict):
    # a dynamics model directory: the renderer learns its VAE latents of each recorded frame from the state
    # (null: no renderer; env.frames_from=state needs one)
    dynamics_model_dir: str | None = None
    steps: int = Field(2000, ge=1)
    batch_size: int = Field(256, ge=1)
    lr: float = Field(1e-3, gt=0.0)
    hidden: int = Field(512, ge=1)
    # a directory that keeps each episode's VAE latents between trainings (keyed by the VAE's weights, the
    # latent normalisers and the episode file's bytes), so a refit on grown data encodes only the new episodes
    latent_cache: str | None = None


class StateModelJob(Strict):
    data: WMDataConfig
    # what it may read: privileged, or observation_only (what a robot records; docs/configuration.md, "setting")
    setting: Setting = "privileged"
    model: StateNetConfig = Field(default_factory=StateNetConfig)
    train: StateTrainConfig = Field(default_factory=StateTrainConfig)
    render: StateRenderConfig = Field(default_factory=StateRenderConfig)
    output_dir: str = "logs/state_model"
    init_model_dir: str | None = None  # warm start from a saved state model (same tasks and sizes)
