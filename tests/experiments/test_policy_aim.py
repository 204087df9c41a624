"""policy_aim.py tells a policy that goes to the target from one that goes to the same place every time."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from policy_and_value.config.schema import env_config

ROOT = Path(__file__).resolve().parents[2]


class Scripted:
    """Moves the hand toward the reach goal (``gain`` 1) or straight ahead whatever the goal (``gain`` 0)."""

    def __init__(self, gain: float):
        self.gain = gain

    def predict(self, obs, mode: str):
        state = obs["state"]
        fixed = torch.tensor([0.0, 0.8, 0.2])
        goal = self.gain * state[:, 36:39] + (1 - self.gain) * fixed
        step = ((goal - state[:, 0:3]) * 100).clamp(-1, 1)
        action = torch.cat([step, torch.zeros(len(state), 1)], dim=1)
        return SimpleNamespace(actions=action[:, None].repeat(1, 4, 1))


@pytest.mark.parametrize("gain", [1.0, 0.0])
def test_slope_follows_whether_the_hand_goes_to_the_goal(monkeypatch, gain):
    bench = import_module("experiments.harness.policy_aim")
    env = env_config(
        env_type="metaworld", tasks=["reach-v3"], num_envs=1, num_action_chunks=4, max_episode_steps=60,
        use_images=False, state_type="full",
    )  # fmt: skip
    r = bench.aim(Scripted(gain), SimpleNamespace(env=SimpleNamespace(eval=env)), "reach-v3", 8, 1, 0)
    if gain:
        assert r["slope_x"] > 0.8 and r["corr_x"] > 0.9 and r["success"] > 0.5
    else:
        assert abs(r["slope_x"]) < 0.2 and r["miss_failure"] > 0.02


def test_a_fixed_press_point_succeeds_only_where_the_button_is_under_it(monkeypatch):
    bench = import_module("experiments.harness.policy_aim")
    env = env_config(
        env_type="metaworld", tasks=["button-press-topdown-v3"], num_envs=1, num_action_chunks=4,
        max_episode_steps=150, state_type="full",
    )  # fmt: skip
    cfg = SimpleNamespace(env=SimpleNamespace(eval=env))
    centre = bench.press_at(cfg, (-0.02, 0.84), 8, 1, 0)
    off_table = bench.press_at(cfg, (0.3, 0.6), 8, 1, 0)
    assert centre > 0.25 and off_table == 0.0
