"""Policy classes by config name (``model.policy_type``); new policies register with a decorator.

The built-in ones are named here by module and function and imported when first asked for (pi0 imports
transformers), so this module imports no policy package and no policy package imports it."""

from __future__ import annotations

import os
from collections.abc import Callable

import torch

from policy_and_value.config.schema import ModelConfig
from policy_and_value.envs.base import EnvSpec
from policy_and_value.models.base import BasePolicy

_REGISTRY: dict[str, Callable[..., BasePolicy]] = {}


def register_policy(name: str) -> Callable:
    """Class decorator: ``@register_policy("pi0")`` makes ``model.policy_type: pi0`` build it."""

    def wrap(factory: Callable[..., BasePolicy]) -> Callable[..., BasePolicy]:
        _REGISTRY[name] = factory
        return factory

    return wrap


def make_policy(
    model_cfg: ModelConfig,
    spec: EnvSpec,
    logprob_type: str = "action_level",
    value_per_action: bool = False,
    model_dir: str | None = None,
) -> BasePolicy:
    """Build the policy named by ``model_cfg.policy_type`` for an env ``spec``; ``model_dir``
    (``rollout.model_dir``) holds initial weights: a pi0 policy directory, or a ``.pt`` state dict
    (or a directory with ``model_state_dict.pt``) for the small actor-critics."""
    name = model_cfg.policy_type
    import_policy(name)
    if name not in _REGISTRY:
        raise ValueError(
            f"model.policy_type={name!r}: allowed values: {', '.join(sorted({*BUILTIN, *_REGISTRY}))}"
        )
    return _REGISTRY[name](
        model_cfg, spec, logprob_type=logprob_type, value_per_action=value_per_action, model_dir=model_dir
    )


def _actor_critic(
    model_cfg: ModelConfig,
    spec: EnvSpec,
    logprob_type: str = "action_level",
    value_per_action: bool = False,
    model_dir: str | None = None,
) -> BasePolicy:
    """The small image+state actor-critic, optionally loaded from a converted state dict."""
    from policy_and_value.models.actor_critic import ActorCritic

    policy = ActorCritic(model_cfg, spec, logprob_type=logprob_type, value_per_action=value_per_action)
    if model_dir is not None:
        path = os.path.join(model_dir, "model_state_dict.pt") if os.path.isdir(model_dir) else model_dir
        policy.load_state_dict(torch.load(path, map_location="cpu", weights_only=True), strict=True)
    return policy


BUILTIN: dict[str, tuple[str, str]] = {  # policy_type -> (module, factory)
    "mlp_actor_critic": (__name__, "_actor_critic"),
    "cnn_actor_critic": (__name__, "_actor_critic"),
    "pi0": ("policy_and_value.models.pi0.factory", "build_pi0_policy"),
    "pi05": ("policy_and_value.models.pi0.factory", "build_pi05_policy"),
}


def import_policy(name: str) -> None:
    """Register built-in policy ``name`` (importing its module) unless something registered it already.
    Workers call it at start-up before they wait for the env spec, so the slow imports overlap env set-up."""
    if name in BUILTIN and name not in _REGISTRY:
        import importlib

        module, factory = BUILTIN[name]
        _REGISTRY[name] = getattr(importlib.import_module(module), factory)
