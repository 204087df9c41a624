"""WorldModelEnv keeps the env contract: shapes, rewards, termination/truncation, determinism, exact
restore, keyframe resets, prediction videos (beside the real frames on replay), and its config checks."""

from __future__ import annotations

import glob

import imageio.v2 as imageio
import numpy as np
import pytest
import torch

import world_models.env  # noqa: F401 - registers env_type world_model
from policy_and_value.config import load_config
from policy_and_value.config.schema import EnvConfig, env_config
from policy_and_value.envs import make_env
from tests.world_models.conftest import PROMPTS
from toolkits.base.errors import ConfigError
from world_models.imagined_rewards import frame_rewards_on_actions


def _cfg(episodes, model_dirs, **kw) -> EnvConfig:
    dyn, reward = model_dirs
    base = dict(
        env_type="world_model", tasks=list(PROMPTS), num_action_chunks=4, max_episode_steps=8, image_size=32,
        dynamics_model_config=dyn, dynamics_model_image_root=episodes, reward_model_config=reward,
        success_threshold=1.0,
    )  # fmt: skip
    base.update(kw)
    return env_config(**base)


def _actions(n, seed=0):
    return torch.rand(n, 4, 4, generator=torch.Generator().manual_seed(seed)) * 2 - 1


def test_observations_rewards_and_truncation(episodes, model_dirs):
    env = make_env(_cfg(episodes, model_dirs), 3, seed=0)
    obs, info = env.reset()
    assert obs["images"].shape == (3, 2, 32, 32, 3) and obs["images"].dtype == torch.uint8
    assert obs["state"].shape == (3, 39) and obs["task_id"].tolist() == [0, 1, 0]
    assert obs["time_left"].tolist() == [1.0, 1.0, 1.0]  # the share of the 8 steps still to run
    assert obs["prompt"] == [PROMPTS["reach-v3"], PROMPTS["push-v3"], PROMPTS["reach-v3"]]
    assert env.spec.image_shape == (2, 32, 32) and env.spec.num_action_chunks == 4
    assert info["reset_state_ids"].shape == (3,)
    first = obs["images"].clone()
    obs, rewards, terminated, truncated, info = env.chunk_step(_actions(3))
    assert rewards.shape == (3, 4) and rewards.dtype == torch.float32
    assert (rewards[:, :3] == 0).all() and (rewards[:, 3] != 0).any()  # chunk reward on the last action
    assert terminated.dtype == truncated.dtype == torch.bool  # the contract: masks index rewards
    assert not terminated.any() and not truncated.any() and "episode" not in info
    assert not torch.equal(obs["images"], first)  # imagined frames replace the history
    assert obs["time_left"].tolist() == [0.5, 0.5, 0.5]
    obs, rewards, terminated, truncated, info = env.chunk_step(_actions(3, 1))
    assert truncated.all() and not terminated.any()
    assert info["episode"]["episode_len"].tolist() == [8, 8, 8]
    assert info["final_obs"]["images"].shape == (3, 2, 32, 32, 3)


def test_termination_stops_rewards_after_the_first_success_frame(episodes, model_dirs):
    env = make_env(_cfg(episodes, model_dirs, success_threshold=1e-6, chunk_reward=False), 2, seed=0)
    env.reset()
    _, rewards, terminated, truncated, info = env.chunk_step(_actions(2))
    assert terminated.all() and not truncated.any()
    assert info["episode"]["success_once"].all()
    # tiny model: 4 frames per chunk of 4, so frame j ends on action j; only frame 0 is rewarded
    assert (rewards[:, 0] > 0).all() and (rewards[:, 1:] == 0).all()


def test_same_seed_same_imagination_and_deterministic_mode(episodes, model_dirs):
    a, b = (make_env(_cfg(episodes, model_dirs), 2, seed=5) for _ in range(2))
    ids = torch.tensor([0, 1])
    oa, _ = a.reset(reset_state_ids=ids)
    ob, _ = b.reset(reset_state_ids=ids)
    assert torch.equal(oa["images"], ob["images"])
    acts = _actions(2)
    first = a.chunk_step(acts)[0]["images"]
    assert torch.equal(first, b.chunk_step(acts)[0]["images"])
    # deterministic imagination: the same history and actions give the same frames again
    a.reset(reset_state_ids=ids)
    assert torch.equal(a.chunk_step(acts)[0]["images"], first)
    # env.reward_scale scales the rewards and returns, as in the simulators
    scaled = make_env(_cfg(episodes, model_dirs, reward_scale=0.5), 2, seed=5)
    scaled.reset(reset_state_ids=ids)
    a.reset(reset_state_ids=ids)
    plain = a.chunk_step(acts)[1]
    assert plain.abs().sum() > 0
    torch.testing.assert_close(scaled.chunk_step(acts)[1], plain * 0.5)
    # stochastic imagination draws new noise each chunk
    c = make_env(_cfg(episodes, model_dirs, stochastic_imagination=True), 2, seed=5)
    c.reset(reset_state_ids=ids)
    x = c.chunk_step(acts)[0]["images"]
    c.reset(reset_state_ids=ids)
    assert not torch.equal(c.chunk_step(acts)[0]["images"], x)


def test_get_state_set_state_continues_exactly(episodes, model_dirs):
    env = make_env(_cfg(episodes, model_dirs, stochastic_imagination=True, max_episode_steps=12), 2, seed=1)
    env.reset()
    env.chunk_step(_actions(2))
    saved = env.get_state()
    first = [env.chunk_step(_actions(2, k)) for k in (1, 2)]
    env.set_state(saved)
    again = [env.chunk_step(_actions(2, k)) for k in (1, 2)]
    for (o1, r1, *_), (o2, r2, *_) in zip(first, again):
        assert torch.equal(o1["images"], o2["images"]) and torch.equal(r1, r2)
        assert torch.equal(o1["state"], o2["state"])


def test_keyframe_resets_start_along_the_episodes(episodes, model_dirs):
    from toolkits.episodes import EpisodeDataset

    env = make_env(_cfg(episodes, model_dirs, tasks=["reach-v3"], reset_mode="keyframe"), 4, seed=0)
    data = EpisodeDataset(episodes, tasks=["reach-v3"])
    frames = np.concatenate([data[i].images for i in range(len(data))])
    starts = set()
    for _ in range(3):
        obs, _ = env.reset()
        for img in obs["images"].numpy():
            index = np.nonzero((frames == img).all(axis=(1, 2, 3, 4)))[0]
            assert len(index) == 1  # every reset frame is a recorded frame
            starts.add(int(index[0]))
    assert len(starts) > 3  # not only episode starts


def test_groups_share_one_imagined_start(episodes, model_dirs):
    cfg = _cfg(episodes, model_dirs, reset_mode="keyframe", use_fixed_reset_state_ids=True, group_size=2)
    env = make_env(cfg, 4, seed=0)
    starts = set()
    for _ in range(3):
        obs, info = env.reset()
        assert obs["task_id"].tolist() == [0, 0, 1, 1]
        for a, b in ((0, 1), (2, 3)):
            assert torch.equal(obs["images"][a], obs["images"][b]) and torch.equal(
                obs["state"][a], obs["state"][b]
            )
            assert info["reset_state_ids"][a] == info["reset_state_ids"][b]
        starts.add(obs["images"][0].numpy().tobytes())
        # the same actions from one start imagine the same frames; the group's envs differ by actions only
        acts = _actions(4)
        acts[1] = acts[0]
        frames = env.chunk_step(acts)[0]["images"]
        assert torch.equal(frames[0], frames[1]) and not torch.equal(frames[2], frames[3])
    assert len(starts) > 1  # groups draw new starts on each reset


def test_prediction_videos_show_real_frames_when_replaying(episodes, model_dirs, tmp_path):
    out = tmp_path / "wm_pred"
    cfg = _cfg(episodes, model_dirs, visualize_wm_pred=True, dynamics_model_output_path=str(out))
    env = make_env(cfg, 2, seed=0)
    env.reset()
    for _ in range(2):  # replay the recorded actions: real frames are shown under the imagined ones
        env.chunk_step(env.recorded_actions())
    for _ in range(2):  # own actions: imagined frames only
        env.chunk_step(_actions(2))
    videos = sorted(glob.glob(str(out / "*.mp4")))
    assert len(videos) == 4
    heights = {imageio.mimread(v)[0].shape[0] for v in videos}
    assert heights == {2 * 2 * 32 + 32, 2 * 32 + 32}  # two rows (imagined, real) or one, plus the curve
    assert all(len(imageio.mimread(v)) == 1 + 2 * 4 for v in videos)  # first frame + 4 per chunk


def test_model_and_env_must_agree(episodes, model_dirs):
    with pytest.raises(ValueError, match="num_action_chunks=8"):
        make_env(_cfg(episodes, model_dirs, num_action_chunks=8, max_episode_steps=16), 1, seed=0)


def test_config_checks_name_the_key(episodes, model_dirs):
    dyn, reward = model_dirs
    keys = [f"env.train.{k}" for k in ("env_type=world_model", f"dynamics_model_config={dyn}",
            f"dynamics_model_image_root={episodes}", f"reward_model_config={reward}")]  # fmt: skip
    with pytest.raises(ConfigError, match=r"env.train.dynamics_model_image_root=.*no index.json"):
        load_config("ppo_cnn_metaworld", [*keys, f"env.train.dynamics_model_image_root={dyn}"])
    with pytest.raises(
        ConfigError, match=r"env.train.reward_model_ckpt='/no/such.safetensors': no such file"
    ):
        load_config("ppo_cnn_metaworld", [*keys, "env.train.reward_model_ckpt=/no/such.safetensors"])


def test_replay_cli_writes_videos_beside_the_real_frames(episodes, model_dirs, tmp_path, capsys):
    from world_models.replay import main

    dyn, reward = model_dirs
    out = tmp_path / "replay"
    args = ["--model-dir", dyn, "--reward-model-dir", reward, "--data", episodes, "--out", str(out)]
    assert main([*args, "--num-envs", "2", "--steps", "8"]) == 0
    videos = capsys.readouterr().out.split()
    assert len(videos) == 2
    frames = imageio.mimread(videos[0])
    assert len(frames) == 1 + 2 * 4 and frames[0].shape[0] == 2 * 2 * 32 + 32  # imagined and real rows
    assert main([*args, "--steps", "0"]) == 2


def test_precision_is_a_config_key(episodes, model_dirs):
    env = make_env(_cfg(episodes, model_dirs, dynamics_model_dtype="bfloat16"), 2, seed=0)
    assert env.dynamics.dtype == torch.bfloat16
    env.reset()
    obs, rewards, *_ = env.chunk_step(_actions(2))
    assert obs["images"].dtype == torch.uint8 and rewards.dtype == torch.float32


def test_reset_episodes_grouped_by_task_and_every_task_needs_one(episodes):
    from world_models.reset_episodes import load_reset_episodes

    grouped = load_reset_episodes(episodes, ["push-v3", "reach-v3"], "proprio")
    assert [len(grouped[t]) for t in (0, 1)] == [2, 2]  # the fixture's four episodes alternate the two tasks
    assert {ep["prompt"] for ep in grouped[0]} == {PROMPTS["push-v3"]}
    assert grouped[1][0]["state"].shape[1] < 39 and grouped[1][0]["state"].dtype == np.float32
    with pytest.raises(ValueError, match=r"dynamics_model_image_root=.*no episodes of \['door-open-v3'\]"):
        load_reset_episodes(episodes, ["reach-v3", "door-open-v3"], "full")


def test_frame_rewards_land_on_the_action_ending_each_frame_and_stop_after_success():
    """Frame j's reward goes on action ends[j]; after the first success frame nothing more is paid, unless the
    episode does not end there (ignore_terminations)."""
    frames = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    first_hit = torch.tensor([0, 2])  # env 0 succeeds on frame 0; env 1 never (T_f)
    stopped = frame_rewards_on_actions(frames, [1, 3], first_hit, chunk=4, stop_at_success=True)
    torch.testing.assert_close(stopped, torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 3.0, 0.0, 4.0]]))
    going_on = frame_rewards_on_actions(frames, [1, 3], first_hit, chunk=4, stop_at_success=False)
    torch.testing.assert_close(going_on, torch.tensor([[0.0, 1.0, 0.0, 2.0], [0.0, 3.0, 0.0, 4.0]]))
