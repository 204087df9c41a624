"""The one error type of config checks: one line naming the key, the value and what is allowed."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """An invalid job config; the message is one line naming the key, the value and what is allowed."""


def config_error(key: str, value: Any, allowed: str) -> ConfigError:
    """The one-line error for ``key`` having ``value``, saying what is allowed."""
    return ConfigError(f"config error: {key}={value!r}: {allowed}")
