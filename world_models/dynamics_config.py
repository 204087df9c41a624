"""Configuration of the action-conditioned latent video dynamics model and its presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkits.base.model_dir import read_config_json, write_config_json


@dataclass
class DynamicsModelConfig:
    """Everything that defines a dynamics model; saved as ``config.json`` beside the weights.

    The VAE (diffusers ``AutoencoderKLLTXVideo``) encodes each frame of each view on its own; the
    denoiser (``LTXVideoTransformer3DModel``) sees the latent tokens of all views and frames of a sample
    in one sequence (views side by side), history frames clean and future frames noisy, and
    cross-attends to action tokens (plus state and prompt tokens).
    """

    image_size: int = 64
    num_views: int = 1
    history_frames: int = 2  # T_h
    future_frames: int = 4  # T_f frames imagined per chunk
    action_dim: int = 4
    action_chunk: int = 4  # C actions per chunk
    wm_action_interval: int = 1  # every k-th action of the chunk is encoded
    state_dim: int = 0  # 0: no state conditioning
    predict_state: bool = False
    prompts: list[str] = field(default_factory=list)  # prompt conditioning over these (empty: none)
    num_inference_steps: int = 4
    # imagined frame = last history frame + decode(predicted) - decode(last history latent): the VAE's
    # reconstruction error cancels where nothing moves, so static background stays sharp
    decode_residual: bool = False
    # denoise the change of the latents since the last history frame (scaled by its per-channel std)
    # instead of the latents themselves: what stays still is zero, so the model spends itself on motion
    predict_delta: bool = False
    dtype: str = "float32"
    # VAE (AutoencoderKLLTXVideo keyword arguments)
    vae: dict[str, Any] = field(default_factory=dict)
    latent_patch: int = 1  # latent pixels packed into one token (patch x patch)
    # denoiser (LTXVideoTransformer3DModel keyword arguments, without in/out channels)
    transformer: dict[str, Any] = field(default_factory=dict)
    context_dim: int = 64  # width of action/state/prompt tokens (the transformer's caption_channels)
    kl_weight: float = 1e-6

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first inconsistent field."""
        checks = [
            (self.history_frames >= 1, "history_frames must be >= 1"),
            (self.future_frames >= 1, "future_frames must be >= 1"),
            (self.action_chunk >= 1 and self.action_dim >= 1, "action_chunk and action_dim must be >= 1"),
            (self.wm_action_interval >= 1, "wm_action_interval must be >= 1"),
            (
                self.action_chunk % self.wm_action_interval == 0,
                "action_chunk must be divisible by wm_action_interval",
            ),
            (
                self.future_frames <= self.action_chunk,
                "future_frames must be <= action_chunk (one frame per action at most)",
            ),
            (not self.predict_state or self.state_dim > 0, "predict_state needs state_dim > 0"),
            (self.num_inference_steps >= 1, "num_inference_steps must be >= 1"),
            (self.dtype in ("float32", "bfloat16", "float16"), "dtype must be float32, bfloat16 or float16"),
            (self.latent_patch >= 1, "latent_patch must be >= 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"DynamicsModelConfig: {message}")

    @property
    def latent_channels(self) -> int:
        return int(self.vae.get("latent_channels", 128))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        """Write ``config.json``."""
        write_config_json(path, self, "worldrl_dynamics_model")

    @classmethod
    def load(cls, path: str | Path) -> DynamicsModelConfig:
        """Read ``config.json``; unknown keys are an error."""
        return read_config_json(cls, path, "dynamics-model")


def frame_offsets(chunk: int, future: int) -> list[int]:
    """How many actions of a chunk of ``chunk`` come before each of its ``future`` imagined frames."""
    return [((j + 1) * chunk) // future for j in range(future)]


def _tiny() -> DynamicsModelConfig:
    return DynamicsModelConfig(
        vae={
            "latent_channels": 16, "block_out_channels": [32, 64], "decoder_block_out_channels": [32, 64],
            "down_block_types": ["LTXVideoDownBlock3D", "LTXVideoDownBlock3D"], "layers_per_block": [1, 1, 1],
            "decoder_layers_per_block": [1, 1, 1], "spatio_temporal_scaling": [True, False],
            "decoder_spatio_temporal_scaling": [True, False], "decoder_inject_noise": [False, False, False],
            "downsample_type": ["spatial", "conv"], "upsample_residual": [False, False], "upsample_factor": [1, 1],
            "patch_size": 4, "patch_size_t": 1,
        },
        latent_patch=2, predict_delta=True, decode_residual=True,
        transformer={"num_attention_heads": 4, "attention_head_dim": 16, "num_layers": 4, "cross_attention_dim": 64},
        context_dim=64,
    )  # fmt: skip


def _ltx_2b() -> DynamicsModelConfig:
    # LTX-Video 2B (diffusers' defaults are the released model's sizes), three camera views as in RISE
    return DynamicsModelConfig(
        image_size=256, num_views=3, history_frames=2, future_frames=4, action_dim=7, action_chunk=8,
        wm_action_interval=2, vae={}, latent_patch=1,
        transformer={"num_attention_heads": 32, "attention_head_dim": 64, "num_layers": 28, "cross_attention_dim": 2048},
        context_dim=4096, num_inference_steps=10, dtype="bfloat16",
    )  # fmt: skip


PRESETS = {"tiny": _tiny, "ltx_2b": _ltx_2b}


def make_config(preset: str = "tiny", **overrides: Any) -> DynamicsModelConfig:
    """A preset with fields overridden (``vae`` and ``transformer`` key by key); an unknown preset or
    field is an error."""
    if preset not in PRESETS:
        raise ValueError(f"unknown dynamics-model preset {preset!r}; choose from {sorted(PRESETS)}")
    return with_overrides(PRESETS[preset](), **overrides)


def with_overrides(cfg: DynamicsModelConfig, **overrides: Any) -> DynamicsModelConfig:
    """A copy of ``cfg`` with fields overridden (``vae`` and ``transformer`` key by key)."""
    data = cfg.to_dict()
    unknown = sorted(set(overrides) - set(data))
    if unknown:
        raise ValueError(f"unknown dynamics-model config keys {unknown}")
    for key, value in overrides.items():  # vae / transformer overrides change single keyword arguments
        data[key] = (
            {**data[key], **value} if isinstance(data[key], dict) and isinstance(value, dict) else value
        )
    return DynamicsModelConfig(**data)
