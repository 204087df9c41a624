"""Checks every simulator env (``SimulatorEnv``: Meta-World, LIBERO, ManiSkill3) must pass, shared by their
test files: a 2-env batch with chunks of 4 actions."""

import pytest
import torch


def check_truncation_at_the_step_limit(env, action_dim: int) -> None:
    """With a 6-step limit, the first chunk of 4 goes on and the second ends both episodes at 6 steps;
    ``obs["time_left"]`` goes 1 -> 2/6 -> 0 on the way."""
    saved = env.cfg
    env.cfg = saved.model_copy(update={"max_episode_steps": 6})
    try:
        obs, _ = env.reset(reset_state_ids=torch.tensor([0, 1]))
        assert obs["time_left"].tolist() == [1.0, 1.0]
        obs, _, _, truncated, _ = env.chunk_step(torch.zeros(2, 4, action_dim))
        assert not truncated.any() and obs["time_left"].tolist() == pytest.approx([2 / 6, 2 / 6])
        obs, _, _, truncated, info = env.chunk_step(torch.zeros(2, 4, action_dim))
        assert truncated.all() and info["episode"]["episode_len"].tolist() == [6, 6]
        if not env.cfg.auto_reset:  # (an auto-reset env shows the next episode's first obs instead)
            assert obs["time_left"].tolist() == [0.0, 0.0]
    finally:
        env.cfg = saved


def check_success_rewards_once(env, action_dim: int) -> None:
    """Env 1 succeeding at the chunk's first step (the caller makes its simulator report success) ends its
    episode with reward 1 there and 0 after; env 0 goes on."""
    _, rewards, terminated, truncated, info = env.chunk_step(torch.zeros(2, 4, action_dim))
    assert terminated.tolist() == [False, True] and not truncated.any()
    assert rewards[1].tolist() == [1.0, 0.0, 0.0, 0.0] and rewards[0].sum() == 0  # reward once, then stops
    assert info["episode"]["env_ids"].tolist() == [1] and info["episode"]["success_once"].tolist() == [True]
