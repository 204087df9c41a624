"""Job configs: the typed schema, validation with one-line errors, and Hydra composition."""

from policy_and_value.config.load import load_config
from policy_and_value.config.schema import JobConfig
from policy_and_value.config.validate import validate_config
from toolkits.base.compose import available_configs, compose_config
from toolkits.base.errors import ConfigError

__all__ = [
    "ConfigError",
    "JobConfig",
    "available_configs",
    "compose_config",
    "load_config",
    "validate_config",
]
