"""MetaWorldEnv: multi-view images, prompts, chunking, truncation, reset states, exact restore, videos."""

import numpy as np
import pytest
import torch

from policy_and_value.config.schema import VideoConfig, env_config
from policy_and_value.envs import make_env
from policy_and_value.envs.base import assign_tasks
from policy_and_value.envs.metaworld_tasks import PROMPTS, select_state

pytestmark = pytest.mark.slow


def _cfg(**kw):
    base = dict(
        env_type="metaworld",
        tasks=["reach-v3", "push-v3"],
        num_action_chunks=4,
        max_episode_steps=12,
        image_size=32,
    )
    base.update(kw)
    return env_config(**base)


def _acts(n, steps=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(n, 4, 4, generator=g) * 2 - 1 for _ in range(steps)]


def test_observation_contract_two_cameras_and_prompts():
    env = make_env(_cfg(cameras=["corner", "gripperPOV"]), 3, seed=0)
    try:
        obs, info = env.reset()
        assert obs["images"].shape == (3, 2, 32, 32, 3) and obs["images"].dtype == torch.uint8
        assert obs["state"].shape == (3, 39)
        assert obs["task_id"].tolist() == [0, 1, 0]
        assert obs["prompt"] == [PROMPTS["reach-v3"], PROMPTS["push-v3"], PROMPTS["reach-v3"]]
        assert env.spec.image_shape == (2, 32, 32) and env.spec.action_dim == 4
        assert len({id(r) for r in env.renderers}) == 2  # one renderer per task, shared by its envs
        # the two views differ and frames are not blank
        assert not torch.equal(obs["images"][:, 0], obs["images"][:, 1])
        assert obs["images"].float().std() > 5
        # upright: in the corner view the wooden (brown) table top lies in the lower half of the frame
        img = obs["images"][:, 0].float()
        r, g, b = img[..., 0], img[..., 1], img[..., 2]
        wood = (r > g + 10) & (g > b + 5) & (r > 60)
        assert wood[:, 16:].sum() > 2 * wood[:, :16].sum()
    finally:
        env.close()


def test_proprio_state_and_no_images():
    env = make_env(_cfg(use_images=False, state_type="proprio"), 2, seed=0)
    try:
        obs, _ = env.reset()
        assert "images" not in obs and obs["state"].shape == (2, 4)
        assert env.spec.image_shape is None
    finally:
        env.close()


def test_proprio_cuts_metaworld_states_and_keeps_states_recorded_as_proprio():
    """``proprio`` reads the hand and gripper from Meta-World's 39 numbers, and a recording that is proprioception
    already (Meta-World's 4 numbers, LIBERO's and ManiSkill's 8) whole; ``full`` never cuts."""
    full = np.arange(2 * 39, dtype=np.float32).reshape(2, 39)
    assert select_state(full, "proprio").tolist() == full[:, :4].tolist()
    assert select_state(full, "full") is full
    libero = np.arange(3 * 8, dtype=np.float32).reshape(3, 8)
    assert select_state(libero, "proprio").shape == (3, 8)
    assert select_state(torch.from_numpy(libero), "proprio").shape == (3, 8)
    assert select_state(full[:, :4], "proprio").shape == (2, 4)


def test_truncation_auto_reset_and_episode_info():
    env = make_env(_cfg(use_images=False), 2, seed=0)
    try:
        obs, _ = env.reset()
        ends, left = [], [obs["time_left"].tolist()]
        for a in _acts(2, steps=6):
            obs, r, te, tr, info = env.chunk_step(a * 0.1)
            assert r.shape == (2, 4)
            left.append(obs["time_left"].tolist())
            if "episode" in info:
                ends.append(info["episode"]["episode_len"].tolist())
                assert tr.all()
        assert ends == [[12, 12], [12, 12]]  # 12 steps = 3 chunks of 4
        # the share of the 12 steps still to run; an auto-reset shows the next episode's first obs
        assert [row[0] for row in left] == pytest.approx([1, 8 / 12, 4 / 12, 1, 8 / 12, 4 / 12, 1])
    finally:
        env.close()


def test_fixed_reset_states_are_shared_within_groups():
    env = make_env(
        _cfg(tasks=["reach-v3", "push-v3"], use_images=False, use_fixed_reset_state_ids=True, group_size=2),
        4, seed=3,
    )  # fmt: skip
    try:
        obs, info = env.reset()
        ids = info["reset_state_ids"].tolist()
        assert ids[0] == ids[1] and ids[2] == ids[3]
        assert obs["task_id"].tolist() == [0, 0, 1, 1]  # a group is one task, so one start
        assert torch.equal(obs["state"][0], obs["state"][1]) and torch.equal(obs["state"][2], obs["state"][3])
        obs, info = env.reset(reset_state_ids=torch.tensor([7, 7, 7, 7]))
        assert info["reset_state_ids"].tolist() == [7, 7, 7, 7]
    finally:
        env.close()


def test_state_restore_into_a_fresh_env_is_exact():
    cfg = _cfg(tasks=["push-v3", "door-open-v3", "drawer-open-v3"])
    acts = _acts(3, steps=10)
    a = make_env(cfg, 3, seed=0)
    b = make_env(cfg, 3, seed=42)
    try:
        a.reset()
        for x in acts[:4]:  # crosses an auto-reset (12-step episodes)
            a.chunk_step(x)
        state = a.get_state()
        first = [a.chunk_step(x) for x in acts[4:]]
        b.set_state(state)
        second = [b.chunk_step(x) for x in acts[4:]]
        for x, y in zip(first, second, strict=True):
            assert torch.equal(x[1], y[1]) and torch.equal(x[0]["images"], y[0]["images"])
            assert torch.equal(
                x[0]["state"], y[0]["state"]
            )  # incl. the goal, which Meta-World clips to its obs bounds
    finally:
        a.close()
        b.close()


def test_videos_are_written_per_episode(tmp_path):
    import imageio.v2 as imageio

    env = make_env(
        _cfg(video_cfg=VideoConfig(save_video=True, max_envs=1)), 2, seed=0, video_dir=str(tmp_path)
    )
    try:
        env.reset()
        for a in _acts(2, steps=3):
            env.chunk_step(a)
    finally:
        env.close()
    files = sorted(tmp_path.glob("*.mp4"))
    assert [f.name for f in files] == ["rank0_env0_episode0.mp4"]
    frames = imageio.mimread(files[0])
    assert len(frames) == 13  # first frame + 12 steps
    assert np.asarray(frames[0]).shape[1] >= 128


def test_episodes_started_while_the_video_is_disabled_are_neither_recorded_nor_rendered(tmp_path):
    """Evaluation records its first round only (the env worker disables the writer for later rounds)."""
    env = make_env(
        _cfg(video_cfg=VideoConfig(save_video=True, max_envs=1)), 2, seed=0, video_dir=str(tmp_path)
    )
    try:
        env.video.enabled = False
        env.reset()
        renders = []
        env._render = lambda ids, render=env._render: renders.append(len(ids)) or render(ids)
        chunks = _acts(2, steps=3)
        for a in chunks:
            env.chunk_step(a)
        env.video.close()
    finally:
        env.close()
    assert not list(tmp_path.glob("*.mp4"))
    assert len(renders) >= len(chunks) and set(renders) == {2}  # observations of both envs, no video frames


def test_tasks_go_round_robin_over_groups():
    assert assign_tasks(6, 3).tolist() == [0, 1, 2, 0, 1, 2]
    assert assign_tasks(6, 3, group_size=2).tolist() == [0, 0, 1, 1, 2, 2]
    assert assign_tasks(4, 3, rank=1, group_size=2).tolist() == [2, 2, 0, 0]  # global groups 2 and 3


def test_task_weights_give_each_task_its_share_of_the_groups_spread_evenly():
    assert assign_tasks(6, 3, weights=[1, 1, 1]).tolist() == assign_tasks(6, 3).tolist()
    ids = assign_tasks(16, 3, group_size=2, weights=[2, 1, 1])  # 8 groups
    assert np.bincount(ids[::2], minlength=3).tolist() == [4, 2, 2]
    assert (ids[::2] == ids[1::2]).all()  # a group's envs share their task
    assert ids[::2].tolist() == [0, 1, 2, 0, 0, 1, 2, 0]  # interleaved, not blocks
    workers = np.concatenate([assign_tasks(4, 3, rank=r, group_size=2, weights=[2, 1, 1]) for r in range(4)])
    assert workers.tolist() == ids.tolist()  # the ranks' envs together are the global assignment
    assert 2 not in assign_tasks(12, 3, weights=[1, 1, 0]).tolist()


def test_success_reward_is_the_outcome_and_ended_envs_keep_their_frames():
    """``reward_signal: success``: the scripted expert's episode returns exactly 1 (given at the step it
    first succeeds, where it ends) and random actions return 0; once an episode has ended its frames are
    no longer rendered but kept as they were."""
    from toolkits.collect_episodes import expert_for

    cfg = _cfg(tasks=["reach-v3"], reward_signal="success", max_episode_steps=150, auto_reset=False)
    env = make_env(cfg, 2, seed=0)
    expert = expert_for("reach-v3")
    try:
        env.reset()
        rewards, alive, last_frame = [], torch.ones(2, dtype=torch.bool), None
        while alive.any():
            chunk = torch.zeros(2, 4, 4)
            chunk[1] = torch.rand(4, 4) * 2 - 1
            for c in range(4):  # the expert plans from the state at the chunk's start: fine for reach
                chunk[0, c] = torch.as_tensor(expert.get_action(env._state[0]), dtype=torch.float32)
            obs, r, terminated, truncated, _ = env.chunk_step(chunk)
            rewards.append(r * alive[:, None])
            if not alive[0] and last_frame is not None:
                assert torch.equal(obs["images"][0], last_frame)
            if alive[0] and terminated[0]:
                last_frame = obs["images"][0].clone()
            alive &= ~(terminated | truncated)
        total = torch.cat(rewards, 1).sum(1)
        assert total.tolist() == [1.0, 0.0] and last_frame is not None
        assert set(torch.cat(rewards, 1).unique().tolist()) <= {0.0, 1.0}
    finally:
        env.close()


def test_layout_seed_draws_other_layouts():
    """The same reset state ids give other goal positions under another ``layout_seed``."""
    goals = []
    for layout_seed in (0, 1):
        env = make_env(_cfg(tasks=["reach-v3"], layout_seed=layout_seed), 2, seed=0)
        try:
            obs, _ = env.reset(reset_state_ids=torch.tensor([0, 1]))
            goals.append(obs["state"][:, -3:])
        finally:
            env.close()
    assert not torch.allclose(goals[0], goals[1])
