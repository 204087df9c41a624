"""Building a pi0 policy for an env from the job's model config (the policy-registry entry points).

``model.policy_type: pi0`` (or ``pi05``) selects it. Read from the model config: ``action_dim``,
``num_action_chunks``, ``add_value_head`` and ``pi0`` (a dict: ``preset`` plus any ``Pi0Config`` field
overrides). ``model_dir`` (``rollout.model_dir``: a saved policy directory, e.g. from imitation
training) is loaded when given, else a fresh model is built from the preset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policy_and_value.envs.base import EnvSpec
from policy_and_value.models.pi0.configuration_pi0 import Pi0Config, make_config
from policy_and_value.models.pi0.policy_pi0 import Pi0Policy
from policy_and_value.models.pi0.tokenizer_pi0 import PromptTokenizer, build_prompt_tokenizer
from policy_and_value.models.pi0.weights import from_pretrained


def task_prompts(tasks: tuple[str, ...] | list[str]) -> list[str]:
    """Instruction text for each task name (Meta-World's table when it knows the task)."""
    try:
        from policy_and_value.envs.metaworld_tasks import PROMPTS
    except ImportError:  # pragma: no cover - the table is static, this is only a guard
        PROMPTS = {}
    return [PROMPTS.get(t, t) for t in tasks]


def build_pi0_policy(
    model_cfg: Any,
    spec: EnvSpec,
    logprob_type: str = "action_level",
    value_per_action: bool = False,
    pi05: bool = False,
    model_dir: str | None = None,
) -> Pi0Policy:
    """A pi0 policy sized for ``spec``: loaded from ``model_dir`` or built fresh from a preset."""
    opts = dict(getattr(model_cfg, "pi0", None) or {})
    preset = opts.pop("preset", "tiny_pi05" if pi05 else "tiny")
    action_dim = getattr(model_cfg, "action_dim", None) or spec.action_dim
    chunks = getattr(model_cfg, "num_action_chunks", None) or spec.num_action_chunks
    fields: dict[str, Any] = {
        "logprob_type": logprob_type,
        "value_per_action": value_per_action,
        "add_value_head": bool(getattr(model_cfg, "add_value_head", False)),
        "action_dim": action_dim,
        "num_action_chunks": chunks,
        "state_dim": spec.state_dim,
        "value_num_tasks": max(len(spec.tasks), 1),
    }
    if model_dir:
        saved = Pi0Config.load(Path(model_dir) / "config.json")
        for key, have in (("state_dim", spec.state_dim), ("action_dim", action_dim)):
            if getattr(saved, key) != have:
                raise ValueError(
                    f"rollout.model_dir={model_dir}: the policy was trained with {key}={getattr(saved, key)} "
                    f"but the env gives {have} (check env state_type / model.action_dim)"
                )
        return from_pretrained(model_dir, **{**fields, **opts})
    cfg = make_config(preset)
    fields.update(
        chunk_size=max(cfg.chunk_size, chunks),
        max_action_dim=max(cfg.max_action_dim, action_dim),
        max_state_dim=max(cfg.max_state_dim, spec.state_dim),
    )
    if cfg.pi05:  # task words, "Task:/State:/Action:" and about two tokens per state number
        fields["max_token_len"] = max(cfg.max_token_len, 32 + 2 * spec.state_dim)
    cfg = cfg.replace(**{**fields, **opts})
    hf_tok = build_prompt_tokenizer(
        task_prompts(spec.tasks), vocab_size=cfg.vocab_size, num_advantage_bins=cfg.num_advantage_bins
    )
    return Pi0Policy(cfg, PromptTokenizer(hf_tok, cfg.max_token_len))


def build_pi05_policy(
    model_cfg: Any,
    spec: EnvSpec,
    logprob_type: str = "action_level",
    value_per_action: bool = False,
    model_dir: str | None = None,
) -> Pi0Policy:
    """``build_pi0_policy`` with the pi0.5 variant."""
    return build_pi0_policy(model_cfg, spec, logprob_type, value_per_action, pi05=True, model_dir=model_dir)
