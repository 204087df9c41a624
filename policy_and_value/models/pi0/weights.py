"""Saving and loading pi0 policies as a directory, in worldrl's or openpi's PyTorch key layout.

A policy directory holds ``config.json``, ``model.safetensors``, the tokenizer files, ``norm_stats.json``
(when statistics are set) and ``lora/`` (peft adapter, when LoRA is on). Weights are read only with
safetensors; every load is strict: missing or unexpected keys (or wrong shapes) raise an error that
lists them.

openpi layout (``PI0Pytorch.state_dict()`` as written by its converter with ``safetensors.save_model``):
``paligemma_with_expert.paligemma.model.{vision_tower.vision_model, multi_modal_projector.linear,
language_model}.*``, ``paligemma_with_expert.gemma_expert.model.*``, and top-level ``action_in_proj``,
``action_out_proj``, ``state_proj`` + ``action_time_mlp_{in,out}`` (pi0) or ``time_mlp_{in,out}`` (pi0.5).
LeRobot's port adds a leading ``model.``, which is stripped.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from policy_and_value.models.pi0.configuration_pi0 import Pi0Config
from policy_and_value.models.pi0.lora import save_lora
from policy_and_value.models.pi0.normalize import load_norm_stats, save_norm_stats
from policy_and_value.models.pi0.policy_pi0 import Pi0Policy
from policy_and_value.models.pi0.tokenizer_pi0 import PromptTokenizer

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
NORM_FILE = "norm_stats.json"
LORA_DIR = "lora"

_PG = "paligemma_with_expert.paligemma."
_EMBED = _PG + "model.language_model.embed_tokens.weight"
_PG_LM_HEAD = _PG + "lm_head.weight"
# (worldrl prefix, openpi prefix), most specific first
_PREFIX_MAP = (
    ("model.vision_tower.", _PG + "model.vision_tower.vision_model."),
    ("model.multi_modal_projector.", _PG + "model.multi_modal_projector.linear."),
    ("model.language_model.", _PG + "model.language_model."),
    ("model.action_expert.", "paligemma_with_expert.gemma_expert.model."),
)
_TOP_LEVEL = (
    "action_in_proj",
    "action_out_proj",
    "state_proj",
    "action_time_mlp_in",
    "action_time_mlp_out",
    "time_mlp_in",
    "time_mlp_out",
)
# In openpi's layout but unused by pi0's computation: the expert's LM head (vocabulary-sized, never
# applied) and its absent embedding. PaliGemma's lm_head is tied to embed_tokens (see below).
OPENPI_UNUSED = (
    "paligemma_with_expert.gemma_expert.lm_head.weight",
    "paligemma_with_expert.gemma_expert.model.embed_tokens.weight",
)
RL_HEADS = ("value_head.", "noise_head.")


# ---------------------------------------------------------------------------------- key mapping
def to_openpi_key(key: str) -> str:
    """worldrl name -> openpi name (RL heads, which openpi lacks, keep their worldrl names)."""
    for ours, theirs in _PREFIX_MAP:
        if key.startswith(ours):
            return theirs + key[len(ours) :]
    head = key.removeprefix("model.")
    if key.startswith("model.") and head.split(".")[0] in _TOP_LEVEL:
        return head
    return key


def from_openpi_key(key: str) -> str:
    """openpi name -> worldrl name (inverse of ``to_openpi_key``; unknown names pass through)."""
    for ours, theirs in _PREFIX_MAP:
        if key.startswith(theirs):
            return ours + key[len(theirs) :]
    if key.split(".")[0] in _TOP_LEVEL:
        return "model." + key
    return key


def is_openpi_layout(keys: list[str]) -> bool:
    """True when the keys look like openpi's (or LeRobot's ``model.``-prefixed) layout."""
    return any(k.startswith(("paligemma_with_expert.", "model.paligemma_with_expert.")) for k in keys)


def from_openpi_state_dict(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Map an openpi state dict to worldrl names; returns it and the (known-unused) keys dropped."""
    if any(k.startswith("model.paligemma_with_expert.") for k in state):
        state = {k.removeprefix("model."): v for k, v in state.items()}
    state = dict(state)
    dropped = [k for k in OPENPI_UNUSED if state.pop(k, None) is not None]
    if _PG_LM_HEAD in state:  # tied with embed_tokens; save_model may have kept only this name
        head = state.pop(_PG_LM_HEAD)
        dropped.append(_PG_LM_HEAD)
        state.setdefault(_EMBED, head)
    return {from_openpi_key(k): v for k, v in state.items()}, dropped


# ---------------------------------------------------------------------------------- state dicts
def canonical_key(key: str) -> str:
    """A parameter's name without peft's ``base_layer`` indirection."""
    return key.replace(".base_layer.", ".")


def policy_state_dict(policy: Pi0Policy) -> dict[str, torch.Tensor]:
    """All non-LoRA weights under canonical names, on CPU and contiguous (ready for safetensors)."""
    return {
        canonical_key(k): v.detach().cpu().contiguous()
        for k, v in policy.state_dict().items()
        if "lora_" not in k
    }


def _fmt(names: list[str], limit: int = 30) -> str:
    more = f" ... (+{len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def load_policy_state_dict(
    policy: Pi0Policy,
    state: dict[str, torch.Tensor],
    optional: tuple[str, ...] = (),
    source: str = "state dict",
) -> list[str]:
    """Load canonical-name weights strictly; names under ``optional`` prefixes may be absent (they keep
    their initial values, and are returned)."""
    actual = {canonical_key(k): k for k in policy.state_dict() if "lora_" not in k}
    required = {k for k in actual if not k.startswith(optional)}
    missing = sorted(required - set(state))
    unexpected = sorted(set(state) - set(actual))
    problems = []
    if missing:
        problems.append(f"missing keys ({len(missing)}): {_fmt(missing)}")
    if unexpected:
        problems.append(f"unexpected keys ({len(unexpected)}): {_fmt(unexpected)}")
    params = policy.state_dict()
    wrong = [
        f"{k} {tuple(v.shape)} != {tuple(params[actual[k]].shape)}"
        for k, v in state.items()
        if k in actual and tuple(v.shape) != tuple(params[actual[k]].shape)
    ]
    if wrong:
        problems.append(f"shape mismatches ({len(wrong)}): {_fmt(wrong)}")
    if problems:
        raise KeyError(f"cannot load {source} into Pi0Policy: " + "; ".join(problems))
    result = policy.load_state_dict({actual[k]: v for k, v in state.items()}, strict=False)
    assert not result.unexpected_keys, result.unexpected_keys
    return sorted(set(actual) - set(state))


def load_weights_file(policy: Pi0Policy, path: str | Path) -> None:
    """Load ``model.safetensors`` in either layout (detected from the key names)."""
    state = load_file(str(path))
    if is_openpi_layout(list(state)):
        state, dropped = from_openpi_state_dict(state)
        if dropped:
            log.info("openpi checkpoint %s: ignoring unused %s", path, dropped)
        fresh = load_policy_state_dict(policy, state, optional=RL_HEADS, source=str(path))
        if fresh:
            log.info("openpi checkpoint %s has no RL heads; %d tensors keep their init", path, len(fresh))
    else:
        load_policy_state_dict(policy, state, source=str(path))


# ---------------------------------------------------------------------------------- directories
def save_pretrained(policy: Pi0Policy, directory: str | Path, layout: str = "worldrl") -> Path:
    """Write the policy directory; ``layout="openpi"`` names the weights as openpi's PyTorch port."""
    if layout not in ("worldrl", "openpi"):
        raise ValueError(f"layout must be worldrl or openpi, not {layout!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cfg = policy.cfg
    if cfg.is_lora:
        save_lora(policy, directory / LORA_DIR)
        cfg = cfg.replace(lora_path=LORA_DIR)
    cfg.save(directory / CONFIG_FILE)
    state = policy_state_dict(policy)
    if layout == "openpi":
        state = {to_openpi_key(k): v for k, v in state.items()}
    # one metadata key: safetensors writes several in a random order (safetensors#584), so rebuilt files would
    # differ from their checksums; the layout is read from the key names (is_openpi_layout)
    save_file(state, str(directory / WEIGHTS_FILE), metadata={"format": "pt"})
    policy.tokenizer.save(directory)
    stats = policy.normalizer.stats()
    if stats:
        save_norm_stats(stats, directory / NORM_FILE)
    return directory


def from_pretrained(directory: str | Path, device: str | torch.device = "cpu", **overrides: Any) -> Pi0Policy:
    """Build a policy from a directory written by ``save_pretrained`` (RL/training fields may be
    overridden, e.g. ``noise_method`` or ``add_value_head``; architecture changes fail the strict load)."""
    directory = Path(directory)
    cfg = Pi0Config.load(directory / CONFIG_FILE)
    if overrides:
        cfg = cfg.replace(**overrides)
    if cfg.is_lora and cfg.lora_path and not Path(cfg.lora_path).is_absolute():
        cfg = cfg.replace(lora_path=str(directory / cfg.lora_path))
    tokenizer = PromptTokenizer.load(directory, cfg.max_token_len)
    stats = load_norm_stats(directory / NORM_FILE) if (directory / NORM_FILE).exists() else None
    policy = Pi0Policy(cfg, tokenizer, stats)
    state = load_file(str(directory / WEIGHTS_FILE))
    optional: tuple[str, ...] = ()
    if is_openpi_layout(list(state)):
        state, _ = from_openpi_state_dict(state)
        optional = RL_HEADS
    if overrides:  # an RL head switched on by an override starts fresh; one switched off is dropped
        optional = RL_HEADS
        own = {canonical_key(k) for k in policy.state_dict()}
        state = {k: v for k, v in state.items() if not k.startswith(RL_HEADS) or k in own}
    load_policy_state_dict(policy, state, optional=optional, source=str(directory / WEIGHTS_FILE))
    return policy.to(device)


def load_openpi_checkpoint(
    cfg: Pi0Config, weights: str | Path, tokenizer_dir: str | Path, norm_stats: str | Path | None = None
) -> Pi0Policy:
    """A policy from an openpi-converted ``model.safetensors`` (its own config.json is not ours: pass
    the matching preset, e.g. ``make_config("pi05", action_dim=7, ...)``), a local tokenizer directory
    (PaliGemma's) and optionally openpi's ``assets/<robot>/norm_stats.json``."""
    stats = load_norm_stats(norm_stats) if norm_stats else None
    policy = Pi0Policy(cfg, PromptTokenizer.load(tokenizer_dir, cfg.max_token_len), stats)
    load_weights_file(policy, weights)
    return policy
