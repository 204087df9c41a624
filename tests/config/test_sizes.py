"""The state size a world-model env gives, read from its saved model before any worker starts."""

import json

import pytest

from policy_and_value.config.env_schema import WorldModelEnvConfig
from policy_and_value.config.sizes import env_sizes


@pytest.mark.parametrize(
    ("saved_state_dim", "state_type", "expected"),
    [(39, "full", 39), (39, "proprio", 4), (8, "proprio", 8), (8, "full", 8), (0, "proprio", 4)],
)
def test_a_world_model_env_gives_the_state_its_model_was_trained_on(
    tmp_path, saved_state_dim, state_type, expected
):
    """Meta-World's 39 numbers cut to the hand's 4 for ``proprio``; LIBERO's 8 are proprioception, kept whole."""
    (tmp_path / "config.json").write_text(json.dumps({"action_dim": 7, "state_dim": saved_state_dim}))
    env = WorldModelEnvConfig(
        env_type="world_model", dynamics_model_config=str(tmp_path), state_type=state_type
    )
    assert env_sizes(env) == (7, expected)
