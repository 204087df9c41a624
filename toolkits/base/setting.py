"""The data setting a job learns in. ``privileged``: a simulator's own state (object and goal poses), its shaped
reward and its recorded states may be read. ``observation_only``: only what a robot records may be (camera frames,
proprioception, actions, the instruction and the episode's success flag); the simulator only evaluates."""

from __future__ import annotations

from typing import Any, Literal

from toolkits.base.errors import ConfigError, config_error

Setting = Literal["privileged", "observation_only"]
OBSERVATION_ONLY = "observation_only"
POSES = (
    "the simulator's object and goal poses"  # what a full simulator state holds that a robot cannot record
)


def privileged(key: str, value: Any, reads: str, instead: str) -> ConfigError:
    """The one-line error for ``key=value``, which would make a job of the observation-only setting read
    ``reads``; ``instead`` says what to set."""
    return config_error(
        key, value, f"reads {reads}, which a robot does not record (setting: {OBSERVATION_ONLY}); {instead}"
    )


def check_state_input(setting: str, state_type: str, key: str = "data.state_type") -> None:
    """An offline tool's state input (``key``): in the observation-only setting proprioception only."""
    if setting == OBSERVATION_ONLY and state_type == "full":
        raise privileged(key, state_type, POSES, "set data.state_type=proprio")
