"""The LIBERO env (env_type libero) behind the batched env contract: observations, resets from the suite's
init states, success, episode limits, the fast render settings, and config validation."""

from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch
import yaml

from policy_and_value.config import load_config
from policy_and_value.config.schema import EnvConfig, env_config
from policy_and_value.envs.libero_tasks import ACTION_DIM, STATE_DIM, suite_tasks
from policy_and_value.envs.registry import make_env
from tests.envs.simulator_contract import check_success_rewards_once, check_truncation_at_the_step_limit
from toolkits.base.errors import ConfigError

pytestmark = pytest.mark.slow  # each LIBERO env takes a few seconds to build
REPO = Path(__file__).resolve().parents[2]
TASKS = [
    "pick_up_the_alphabet_soup_and_place_it_in_the_basket",
    "pick_up_the_cream_cheese_and_place_it_in_the_basket",
]


def _cfg(**kw) -> EnvConfig:
    base = yaml.safe_load((REPO / "configs" / "env" / "libero_object_3tasks.yaml").read_text())
    return env_config(**{**base, "tasks": TASKS, "image_size": 32, "num_action_chunks": 4, **kw})


@pytest.fixture(scope="module")
def env():
    e = make_env(_cfg(), 2, seed=0)
    yield e
    e.close()


def test_observation_contract(env):
    obs, info = env.reset(reset_state_ids=torch.tensor([0, 1]))
    assert obs["images"].shape == (2, 2, 32, 32, 3) and obs["images"].dtype == torch.uint8
    assert obs["state"].shape == (2, STATE_DIM) and obs["task_id"].tolist() == [0, 1]
    assert obs["prompt"] == [
        "pick up the alphabet soup and place it in the basket",
        "pick up the cream cheese and place it in the basket",
    ]
    assert info["reset_state_ids"].tolist() == [0, 1]
    assert env.spec.action_dim == ACTION_DIM and env.spec.state_dim == STATE_DIM
    assert env.spec.image_shape == (2, 32, 32) and env.spec.action_low == (-1.0,) * ACTION_DIM
    obs, rewards, terminated, truncated, info = env.chunk_step(torch.zeros(2, 4, ACTION_DIM))
    assert rewards.shape == (2, 4) and not terminated.any() and not truncated.any() and "episode" not in info
    assert obs["images"].float().std() > 0  # a scene, not a blank frame


def test_resets_come_from_the_suites_init_states(env):
    states = [
        suite_tasks("libero_object")[t][0].get_task_init_states(suite_tasks("libero_object")[t][1])
        for t in TASKS
    ]
    assert all(len(s) == 50 for s in states)
    a, _ = env.reset(reset_state_ids=torch.tensor([7, 7]))
    b, _ = env.reset(reset_state_ids=torch.tensor([7, 7]))
    c, _ = env.reset(reset_state_ids=torch.tensor([8, 8]))
    assert torch.equal(a["images"], b["images"]) and torch.allclose(a["state"], b["state"])
    assert not torch.equal(a["images"][0], c["images"][0])  # another init state, another scene


def test_start_states_split_the_init_states_into_halves_never_shared(env):
    """``start_states: heldout`` resets to the last 25 init states: its reset 0 is the whole set's reset 25 (both
    envs fresh: a reset after other episodes need not match one pixel for pixel)."""
    one = {"tasks": TASKS[:1]}
    heldout, whole = (
        make_env(_cfg(start_states="heldout", **one), 1, seed=0),
        make_env(_cfg(**one), 1, seed=0),
    )
    try:
        assert heldout.num_start_states == 25 and whole.num_start_states == env.num_start_states == 50
        a, _ = heldout.reset(reset_state_ids=torch.tensor([0]))
        b, _ = whole.reset(reset_state_ids=torch.tensor([25]))
        c, _ = whole.reset(reset_state_ids=torch.tensor([0]))
        assert torch.equal(a["images"], b["images"]) and torch.allclose(a["state"], b["state"])
        assert not torch.equal(a["images"], c["images"])
    finally:
        heldout.close()
        whole.close()
    with pytest.raises(ConfigError, match="start_states"):
        load_config("rl_release_libero", ["env.eval.start_states=unseen"])


def test_success_ends_the_episode_with_reward_one(env, monkeypatch):
    env.reset(reset_state_ids=torch.tensor([0, 0]))
    monkeypatch.setattr(env.envs[1], "check_success", lambda: True)
    check_success_rewards_once(env, ACTION_DIM)


def test_episodes_are_truncated_at_the_step_limit(env):
    check_truncation_at_the_step_limit(env, ACTION_DIM)


def test_frames_are_rendered_with_the_fast_settings(env):
    for r in env.renderers:
        assert r.model.vis.quality.offsamples == 0
        assert not r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW]
        assert not r.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION]
    assert not env.envs[0].env.use_camera_obs  # robosuite renders nothing per step


def test_envs_of_one_task_share_a_renderer_and_each_shows_its_own_scene():
    """Three envs, two of one task: that task's two share one renderer (its textures held once) yet each frame is
    its own env's, pixel for pixel what a renderer of its own draws."""
    e = make_env(_cfg(num_envs=3), 3, seed=0)
    try:
        e.reset(reset_state_ids=torch.tensor([0, 1, 2]))
        same = [i for i in range(3) if e.task_ids[i] == e.task_ids[0]]
        other = next(i for i in range(3) if e.task_ids[i] != e.task_ids[0])
        assert len(same) == 2 and e.renderers[same[0]] is e.renderers[same[1]]
        assert e.renderers[other] is not e.renderers[same[0]]
        actions = torch.zeros(3, 4, ACTION_DIM)
        actions[same[1], :, 0] = 1.0  # one of the pair moves, the other stays
        obs = e.chunk_step(actions)[0]["images"]
        assert not torch.equal(obs[same[0]], obs[same[1]])
        own = e._renderer(e.envs[same[1]].env.sim.model._model, [])  # a renderer of its own
        own.update_scene(e.envs[same[1]].env.sim.data._data, camera=e.cfg.cameras[0])
        assert np.array_equal(own.render()[:, ::-1], obs[same[1], 0].numpy())
        own.close()
    finally:
        e.close()


def test_the_libero_job_config_validates_and_bad_libero_keys_are_named():
    """``ppo_pi0_libero`` composes (a LIBERO job runs end to end, trained and evaluated in LIBERO, in
    tests/envs/test_libero_loop.py; PPO on pi0 in tests/runtime/test_runner_pi0.py)."""
    cfg = load_config("ppo_pi0_libero", [])
    assert cfg.env.train.env_type == "libero" and cfg.env.eval.env_type == "libero"
    bad = {
        "env.train.suite=libero_objects": "allowed: libero_spatial",
        "env.train.tasks=[pick_up_the_soup]": "not a task of libero_object",
        "env.train.cameras=[frontview]": "allowed: agentview, robot0_eye_in_hand",
        "env.train.state_type=full": "LIBERO gives proprio",
    }
    for override, fragment in bad.items():
        with pytest.raises(ConfigError, match=fragment):
            load_config("ppo_pi0_libero", [override])
