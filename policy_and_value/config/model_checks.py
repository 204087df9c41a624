"""Checks of ``model`` (the pi0 options by their full key, a saved policy's config and architecture)
before any weights are built."""

from __future__ import annotations

import difflib
import os
from typing import Any

from policy_and_value.config.schema import JobConfig
from toolkits.base.errors import config_error


def check_pi0(cfg: JobConfig) -> None:
    """``model.pi0`` keys and values (and a saved policy's config) before any weights are built."""
    options = dict(cfg.model.pi0)
    if cfg.model.policy_type not in ("pi0", "pi05"):
        if cfg.algorithm.train_mode == "IL":
            raise config_error(
                "algorithm.train_mode", "IL",
                f"advantage-conditioned imitation needs model.policy_type pi0 or pi05, not {cfg.model.policy_type}",
            )  # fmt: skip
        if cfg.algorithm.offline_data_coef > 0:
            raise config_error(
                "algorithm.offline_data_coef", cfg.algorithm.offline_data_coef,
                f"flow matching on offline chunks needs model.policy_type pi0 or pi05, not {cfg.model.policy_type}",
            )  # fmt: skip
        if cfg.algorithm.policy_config_name is not None:
            raise config_error(
                "algorithm.policy_config_name",
                cfg.algorithm.policy_config_name,
                f"only used with model.policy_type pi0 or pi05, not {cfg.model.policy_type}",
            )
        if options:
            raise config_error(
                "model.pi0",
                options,
                f"only used with model.policy_type pi0 or pi05, not {cfg.model.policy_type}",
            )
        return
    from policy_and_value.models.pi0.configuration_pi0 import PRESETS, Pi0Config, Pi0ConfigError, make_config

    preset = options.pop("preset", "tiny")
    if preset not in PRESETS:
        raise config_error("model.pi0.preset", preset, f"allowed values: {', '.join(sorted(PRESETS))}")
    known = set(Pi0Config.__dataclass_fields__)
    for key, value in options.items():
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"did you mean 'model.pi0.{close[0]}'? " if close else ""
            raise config_error(
                f"model.pi0.{key}", value, f"unknown key; {hint}allowed: preset, {', '.join(sorted(known))}"
            )
    try:
        make_config(preset, **options).validate()
    except Pi0ConfigError as err:
        raise config_error(f"model.pi0.{err.field}", err.value, err.allowed) from None
    except (TypeError, ValueError) as err:
        raise config_error("model.pi0", dict(cfg.model.pi0), str(err).removeprefix("Pi0Config: ")) from None
    if options.get("value_from_state") and cfg.env.train.env_type == "gym":
        raise config_error(
            "model.pi0.value_from_state", options["value_from_state"],
            "the critic reads obs['time_left'], which gym envs do not give (simulators and world models do)",
        )  # fmt: skip
    model_dir = cfg.rollout.model_dir
    if model_dir is not None and not os.path.isfile(os.path.join(model_dir, "config.json")):
        raise config_error(
            "rollout.model_dir",
            model_dir,
            "a pi0 policy directory needs config.json (written by save_pretrained)",
        )
    saved = Pi0Config.load(os.path.join(model_dir, "config.json")) if model_dir is not None else None
    _check_policy_config_name(cfg, preset, saved)
    _check_train_mode(cfg, saved)


def _check_train_mode(cfg: JobConfig, saved: Any) -> None:
    """``train_mode: IL`` conditions the prompt on advantage bins, so the policy must read them
    (``saved``: the config of the policy in rollout.model_dir, if any), unless
    ``imitation_min_advantage`` selects what is imitated (filtered imitation needs no bins)."""
    if cfg.algorithm.train_mode != "IL" or cfg.algorithm.imitation_min_advantage is not None:
        return
    conditioned = cfg.model.pi0.get("with_advantage_condition")
    if conditioned is None and saved is not None:
        conditioned = saved.with_advantage_condition
    if not conditioned:
        raise config_error(
            "algorithm.train_mode", "IL",
            "needs model.pi0.with_advantage_condition=true (the prompt carries the advantage bin) or "
            "algorithm.imitation_min_advantage (filtered imitation)",
        )  # fmt: skip


def _check_policy_config_name(cfg: JobConfig, preset: str, saved: Any) -> None:
    """``algorithm.policy_config_name`` names the preset; the policy in rollout.model_dir (its config
    ``saved``) must have its layers."""
    from policy_and_value.models.pi0.configuration_pi0 import PRESETS, architecture_differences, make_config

    name = cfg.algorithm.policy_config_name
    if name is None:
        return
    if name not in PRESETS:
        raise config_error(
            "algorithm.policy_config_name", name, f"allowed values: {', '.join(sorted(PRESETS))}"
        )
    if "preset" in cfg.model.pi0 and preset != name:
        raise config_error("algorithm.policy_config_name", name, f"but model.pi0.preset is {preset!r}")
    if saved is None:
        return
    diffs = architecture_differences(make_config(name), saved)
    if diffs:
        raise config_error(
            "algorithm.policy_config_name", name,
            f"rollout.model_dir={cfg.rollout.model_dir} holds another architecture ({name} -> saved): {'; '.join(diffs)}",
        )  # fmt: skip
