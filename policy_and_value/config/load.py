"""Load a job config: compose it with Hydra (``toolkits.base.compose``), then validate it against the schema."""

from __future__ import annotations

from policy_and_value.config.schema import JobConfig
from policy_and_value.config.validate import validate_config
from toolkits.base.compose import compose_config


def load_config(
    config_name: str, overrides: list[str] | None = None, config_dir: str | None = None
) -> JobConfig:
    """Compose the job config ``config_name`` with ``key=value`` overrides and validate the result."""
    return validate_config(compose_config(config_name, overrides or [], config_dir))
