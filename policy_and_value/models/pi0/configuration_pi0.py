"""Configuration of the pi0-family VLA policy (pi0 and pi0.5) and its size presets.

The published models (Black et al. 2024, "pi0"; Physical Intelligence 2025, "pi0.5") put a PaliGemma
prefix (SigLIP So400m/14 vision tower + Gemma 2B) in front of a Gemma 300M "action expert" trained
with flow matching. ``tiny`` keeps the same structure at a size that trains on a laptop CPU.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOISE_METHODS = ("flow_ode", "flow_sde", "flow_noise")
LOGPROB_TYPES = ("chunk_level", "action_level", "token_level")
NORM_MODES = ("quantile", "mean_std", "none")
PALIGEMMA_VOCAB_SIZE = 257_152


class Pi0ConfigError(ValueError):
    """An inconsistent ``Pi0Config`` field: ``field`` (its name), ``value`` and ``allowed`` (what would do)."""

    def __init__(self, field_name: str, value: Any, allowed: str):
        super().__init__(f"Pi0Config: {field_name}={value!r}: {allowed}")
        self.field, self.value, self.allowed = field_name, value, allowed


@dataclass
class GemmaSpec:
    """Size of one Gemma tower (the PaliGemma language model or the action expert)."""

    width: int
    depth: int
    mlp_dim: int
    num_heads: int
    num_kv_heads: int
    head_dim: int


@dataclass
class VisionSpec:
    """Size of the SigLIP vision tower; ``image_size // patch_size`` squared tokens per camera view."""

    hidden: int
    depth: int
    mlp_dim: int
    num_heads: int
    patch_size: int
    image_size: int


@dataclass
class Pi0Config:
    """Everything that defines a pi0/pi0.5 policy; saved as ``config.json`` next to the weights."""

    pi05: bool = False  # pi0.5: discrete state tokens in the prompt + adaRMS time conditioning
    vision: VisionSpec = field(default_factory=lambda: VisionSpec(1152, 27, 4304, 16, 14, 224))
    prefix: GemmaSpec = field(default_factory=lambda: GemmaSpec(2048, 18, 16_384, 8, 1, 256))
    expert: GemmaSpec = field(default_factory=lambda: GemmaSpec(1024, 18, 4096, 8, 1, 256))
    vocab_size: int = PALIGEMMA_VOCAB_SIZE
    max_token_len: int = 48  # prompt tokens (padded/truncated); 200 for pi0.5
    # action chunk the model generates (``action_horizon`` in openpi) and the padded dimensions
    chunk_size: int = 50
    max_action_dim: int = 32
    max_state_dim: int = 32
    # what the env executes: the first ``num_action_chunks`` actions, first ``action_dim`` dims
    num_action_chunks: int = 5
    action_dim: int = 7
    state_dim: int = 8
    num_steps: int = 10  # Euler denoising steps
    # ---- RL sampling
    noise_method: str = "flow_sde"
    noise_level: float = 0.5  # flow_sde: sigma_t = noise_level * sqrt(t / (1 - t))
    noise_std_range: tuple[float, float] = (0.08, 0.16)  # flow_noise: learned std bounds
    joint_logprob: bool = False  # all denoising steps stochastic (else one sampled step)
    joint_logprob_reduce: str = "mean"  # "mean" or "sum" over the denoising steps
    logprob_type: str = "action_level"
    add_value_head: bool = False
    value_after_vlm: bool = False  # value from the mean prefix token (else from the expert output)
    # value from the normalised state, the task and obs["time_left"] instead of network features: a critic
    # that sees the episode's progress and the time left (the shaped return to go depends on both)
    value_from_state: bool = False
    value_num_tasks: int = 1  # the task one-hot's size for value_from_state (set from the env's tasks)
    value_per_action: bool = False  # value [N, C] instead of [N]
    value_hidden: int = 128
    # the critic reads detached features: value-loss gradients train only the value head, so a critic
    # learning from scratch on a pretrained policy cannot disturb the features the actions come from
    detach_value_features: bool = False
    noise_head_hidden: int = 64
    # ---- training
    train_expert_only: bool = False
    is_lora: bool = False
    lora_rank: int = 16
    lora_alpha: float | None = None  # None: equal to the rank
    lora_path: str | None = None  # adapter directory to load (relative paths resolve against the model dir)
    gradient_checkpointing: bool = False
    use_torch_compile: bool = False
    dtype: str = "float32"
    # ---- advantage-conditioned imitation (the prompt carries "Advantage: k")
    with_advantage_condition: bool = False
    advantage_bin_edges: list[float] = field(default_factory=lambda: [0.0])
    # ---- normalisation of state and actions
    norm_mode: str = "quantile"

    def __post_init__(self) -> None:
        for name, cls in (("vision", VisionSpec), ("prefix", GemmaSpec), ("expert", GemmaSpec)):
            value = getattr(self, name)
            if isinstance(value, dict):
                setattr(self, name, cls(**value))
        self.noise_std_range = tuple(self.noise_std_range)
        self.advantage_bin_edges = list(self.advantage_bin_edges)
        self.validate()

    def validate(self) -> None:
        """Raise ``Pi0ConfigError`` naming the first inconsistent field, its value and what is allowed."""
        p, e = self.prefix, self.expert
        checks = [
            ("noise_method", self.noise_method in NOISE_METHODS, f"allowed values: {', '.join(NOISE_METHODS)}"),
            ("logprob_type", self.logprob_type in LOGPROB_TYPES, f"allowed values: {', '.join(LOGPROB_TYPES)}"),
            ("norm_mode", self.norm_mode in NORM_MODES, f"allowed values: {', '.join(NORM_MODES)}"),
            ("joint_logprob_reduce", self.joint_logprob_reduce in ("mean", "sum"), "allowed values: mean, sum"),
            ("dtype", self.dtype in ("float32", "bfloat16", "float16"), "allowed values: float32, bfloat16, float16"),
            (
                "value_from_state", not (self.value_from_state and self.value_after_vlm),
                "value_from_state and value_after_vlm are two inputs for one critic: set one",
            ),
            ("value_num_tasks", self.value_num_tasks >= 1, "must be at least 1"),
            ("expert", p.depth == e.depth, f"depth {e.depth} must equal the prefix's depth {p.depth}"),
            (
                "expert", p.num_kv_heads == e.num_kv_heads and p.head_dim == e.head_dim,
                f"num_kv_heads {e.num_kv_heads} and head_dim {e.head_dim} must equal the prefix's "
                f"({p.num_kv_heads}, {p.head_dim}): the expert reads the prefix KV",
            ),
            ("expert", e.num_heads % e.num_kv_heads == 0, f"num_heads {e.num_heads} must be a multiple of num_kv_heads {e.num_kv_heads}"),
            ("prefix", p.num_heads % p.num_kv_heads == 0, f"num_heads {p.num_heads} must be a multiple of num_kv_heads {p.num_kv_heads}"),
            (
                "vision", self.vision.image_size % self.vision.patch_size == 0,
                f"image_size {self.vision.image_size} must be a multiple of patch_size {self.vision.patch_size}",
            ),
            ("expert", e.width % 2 == 0, f"width {e.width} must be even (sinusoidal time embedding)"),
            (
                "chunk_size", 1 <= self.num_action_chunks <= self.chunk_size,
                f"must be >= num_action_chunks={self.num_action_chunks} (the actions executed per chunk), >= 1",
            ),
            (
                "action_dim", 1 <= self.action_dim <= self.max_action_dim,
                f"must be between 1 and max_action_dim={self.max_action_dim}",
            ),
            (
                "state_dim", 0 <= self.state_dim <= self.max_state_dim,
                f"must be between 0 and max_state_dim={self.max_state_dim}",
            ),
            ("num_steps", self.num_steps >= 1, "must be >= 1 (denoising steps per action chunk)"),
            ("noise_level", self.noise_level >= 0, "must be >= 0"),
            ("noise_std_range", 0 < self.noise_std_range[0] <= self.noise_std_range[1], "need 0 < low <= high"),
            ("lora_rank", self.lora_rank >= 1, "must be >= 1"),
            (
                "advantage_bin_edges", self.advantage_bin_edges == sorted(self.advantage_bin_edges),
                "must be sorted ascending",
            ),
        ]  # fmt: skip
        for field_name, ok, allowed in checks:
            if not ok:
                raise Pi0ConfigError(field_name, getattr(self, field_name), allowed)

    # ------------------------------------------------------------------ derived sizes
    @property
    def tokens_per_view(self) -> int:
        """Image tokens one camera view contributes to the prefix."""
        return (self.vision.image_size // self.vision.patch_size) ** 2

    @property
    def num_advantage_bins(self) -> int:
        """Advantage classes in the prompt (edges split the real line)."""
        return len(self.advantage_bin_edges) + 1

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (nested specs become dicts)."""
        out = dataclasses.asdict(self)
        out["noise_std_range"] = list(self.noise_std_range)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pi0Config:
        """Inverse of ``to_dict``; unknown keys are an error so a typo never goes unnoticed."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known - {"model_type", "format_version"})
        if unknown:
            raise ValueError(f"Pi0Config: unknown keys {unknown}")
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, path: str | Path) -> None:
        """Write ``config.json`` (with a ``model_type`` tag) to ``path``."""
        data = {"model_type": "pi05" if self.pi05 else "pi0", "format_version": 1, **self.to_dict()}
        Path(path).write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, path: str | Path) -> Pi0Config:
        """Read a ``config.json`` written by ``save``."""
        return cls.from_dict(json.loads(Path(path).read_text()))

    def replace(self, **overrides: Any) -> Pi0Config:
        """A copy with some fields changed (nested specs may be given as dicts)."""
        data = self.to_dict()
        data.update(overrides)
        return Pi0Config.from_dict(data)


def _tiny(pi05: bool) -> Pi0Config:
    return Pi0Config(
        pi05=pi05,
        vision=VisionSpec(hidden=64, depth=2, mlp_dim=128, num_heads=4, patch_size=16, image_size=64),
        prefix=GemmaSpec(width=64, depth=2, mlp_dim=128, num_heads=4, num_kv_heads=1, head_dim=16),
        expert=GemmaSpec(width=32, depth=2, mlp_dim=64, num_heads=4, num_kv_heads=1, head_dim=16),
        vocab_size=1024,
        max_token_len=24 if not pi05 else 48,
        chunk_size=8,
        max_action_dim=8,
        max_state_dim=8,
        num_action_chunks=4,
        action_dim=4,
        state_dim=4,
        num_steps=4,
        value_hidden=32,
        noise_head_hidden=16,
    )


def _published(pi05: bool) -> Pi0Config:
    return Pi0Config(pi05=pi05, max_token_len=200 if pi05 else 48)


PRESETS = {
    "tiny": lambda: _tiny(False),
    "tiny_pi05": lambda: _tiny(True),
    "pi0": lambda: _published(False),
    "pi05": lambda: _published(True),
}


def make_config(preset: str = "tiny", **overrides: Any) -> Pi0Config:
    """A preset (``tiny``, ``tiny_pi05``, ``pi0``, ``pi05``) with fields overridden."""
    if preset not in PRESETS:
        raise ValueError(f"unknown pi0 preset {preset!r}; choose from {sorted(PRESETS)}")
    cfg = PRESETS[preset]()
    return cfg.replace(**overrides) if overrides else cfg


# the fields that fix the network's layers (the rest are sizes of the task or RL/training options)
ARCHITECTURE_FIELDS = ("pi05", "vision", "prefix", "expert")


def architecture_differences(expected: Pi0Config, actual: Pi0Config) -> list[str]:
    """``field: expected -> actual`` for every architecture field (or sub-field) that differs."""
    diffs = []
    for name in ARCHITECTURE_FIELDS:
        a, b = getattr(expected, name), getattr(actual, name)
        if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
            diffs += [
                f"{name}.{f.name}: {getattr(a, f.name)} -> {getattr(b, f.name)}"
                for f in dataclasses.fields(a)
                if getattr(a, f.name) != getattr(b, f.name)
            ]
        elif a != b:
            diffs.append(f"{name}: {a} -> {b}")
    return diffs


POLICY_DIR_FILES = ("config.json", "model.safetensors")
POLICY_DIR_EXPECTED = "expected config.json + model.safetensors from train_sft or export_policy"


def policy_dir_problem(directory: str | Path) -> str | None:
    """Why ``directory`` is not a pi0 policy directory (one phrase for a ``config error`` line), or None
    when it has the files ``from_pretrained`` reads first and a pi0 ``config.json``; reads no weights."""
    path = Path(directory)
    if not path.exists():
        return f"no such policy directory ({POLICY_DIR_EXPECTED})"
    if not path.is_dir():
        return f"not a directory ({POLICY_DIR_EXPECTED})"
    missing = [name for name in POLICY_DIR_FILES if not (path / name).is_file()]
    if missing:
        return f"not a policy directory: no {' and no '.join(missing)} ({POLICY_DIR_EXPECTED})"
    try:
        data = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        return f"config.json is unreadable ({' '.join(str(err).split())})"
    model_type = data.get("model_type") if isinstance(data, dict) else None
    if model_type not in ("pi0", "pi05"):
        return (
            f"config.json is a {model_type or 'non-model'} config, not a pi0 policy's ({POLICY_DIR_EXPECTED})"
        )
    try:
        Pi0Config.from_dict(data)
    except (TypeError, ValueError) as err:
        return f"config.json is not a pi0 config this version reads ({' '.join(str(err).split())})"
    return None
