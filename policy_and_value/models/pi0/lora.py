"""LoRA adapters (through peft) on the Gemma towers' attention and MLP projections.

``inject_adapter_in_model`` adds the adapters in place (the policy stays a ``BasePolicy``, no
``PeftModel`` wrapper) and freezes every other weight; the action/state/time projections and the RL
heads are then made trainable again. Adapters are saved in peft's format (``adapter_config.json`` +
``adapter_model.safetensors``) and loaded strictly.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model_state_dict, inject_adapter_in_model, set_peft_model_state_dict
from safetensors.torch import load_file, save_file
from torch import nn

PROJECTIONS = r"(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"


def lora_target_regex(expert_only: bool) -> str:
    """Regex over module names: the expert's projections, and the language model's unless ``expert_only``."""
    towers = "action_expert" if expert_only else "(language_model|action_expert)"
    return rf".*model\.{towers}\.layers\.\d+\.{PROJECTIONS}"


def apply_lora(policy: nn.Module, rank: int, alpha: float | None, expert_only: bool) -> LoraConfig:
    """Inject LoRA adapters into ``policy`` (in place); returns the peft config used."""
    config = LoraConfig(
        r=rank,
        lora_alpha=alpha if alpha is not None else rank,
        lora_dropout=0.0,
        target_modules=lora_target_regex(expert_only),
        bias="none",
    )
    inject_adapter_in_model(config, policy)
    return config


def lora_state_dict(policy: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter weights in peft's naming (no adapter name in the keys)."""
    return {k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(policy).items()}


def save_lora(policy: nn.Module, directory: str | Path) -> None:
    """Write the adapter (peft format) into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(lora_state_dict(policy), str(directory / ADAPTER_WEIGHTS))
    config = policy.peft_config["default"].to_dict()
    config["target_modules"] = str(config["target_modules"])
    (directory / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2, default=str))


def load_lora(policy: nn.Module, directory: str | Path) -> None:
    """Load adapter weights saved by ``save_lora``; a missing or unexpected adapter key is an error."""
    weights = load_file(str(Path(directory) / ADAPTER_WEIGHTS))
    expected = set(lora_state_dict(policy))
    missing, unexpected = sorted(expected - set(weights)), sorted(set(weights) - expected)
    if missing or unexpected:
        raise KeyError(
            f"LoRA adapter {directory}: missing keys {missing[:20]}, unexpected keys {unexpected[:20]}"
        )
    result = set_peft_model_state_dict(policy, weights)
    bad = [k for k in result.unexpected_keys if "lora_" in k]
    if bad:
        raise KeyError(f"LoRA adapter {directory}: could not place {bad[:20]}")


def merge_lora(policy: nn.Module) -> None:
    """Fold the adapters into the base weights (for deployment); the LoRA layers stay but are inert."""
    for module in policy.modules():
        if hasattr(module, "merge") and hasattr(module, "lora_A"):
            module.merge()
