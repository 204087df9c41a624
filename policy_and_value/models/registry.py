"""Policy classes by config name (``model.policy_type``); new policies register with a decorator."""

from __future__ import annotations

from collections.abc import Callable

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
    model_cfg: ModelConfig, spec: EnvSpec, logprob_type: str = "action_level", value_per_action: bool = False
) -> BasePolicy:
    """Build the policy named by ``model_cfg.policy_type`` for an env ``spec``."""
    _register_builtin()
    name = model_cfg.policy_type
    if name not in _REGISTRY:
        raise ValueError(f"model.policy_type={name!r}: allowed values: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](model_cfg, spec, logprob_type=logprob_type, value_per_action=value_per_action)


def _register_builtin() -> None:
    if "mlp_actor_critic" in _REGISTRY:
        return
    from policy_and_value.models.actor_critic import ActorCritic

    _REGISTRY["mlp_actor_critic"] = ActorCritic
    _REGISTRY["cnn_actor_critic"] = ActorCritic
