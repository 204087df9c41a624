"""The world-model env's state modes driven by a state model (states, outcomes, frames from states, the residual,
hallucination penalty and halt, reward modes) with their config checks."""

from __future__ import annotations

import pytest
import torch

import world_models.env  # noqa: F401 - registers env_type world_model
from policy_and_value.config import load_config
from policy_and_value.envs import make_env
from tests.world_models.conftest import tiny_dynamics
from tests.world_models.test_env import _actions, _cfg
from tests.world_models.test_state_model import _model
from toolkits.base.errors import ConfigError


def _world_model_keys(episodes, model_dirs, with_reward_model: bool = True) -> list[str]:
    """Overrides that make ``env.train`` a world-model env of the tiny test models."""
    dyn, reward = model_dirs
    keys = ["env_type=world_model", f"dynamics_model_config={dyn}", f"dynamics_model_image_root={episodes}"]
    return [f"env.train.{k}" for k in keys + ([f"reward_model_config={reward}"] if with_reward_model else [])]


@pytest.fixture(scope="module")
def state_model_dirs(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("state_models")
    shape = list(tiny_dynamics().noise_shape()[1:])
    plain = _model().save_pretrained(root / "plain")
    renders = _model(latent_shape=shape, render_hidden=16).save_pretrained(root / "renders")
    return str(plain), str(renders)


def test_env_states_outcomes_and_filters_come_from_the_state_model(episodes, model_dirs, state_model_dirs):
    plain, _ = state_model_dirs
    cfg = _cfg(episodes, model_dirs, state_model_config=plain, outcome_source="state", max_episode_steps=12)
    env = make_env(cfg, 3, seed=0)
    obs, info = env.reset()
    assert ((info["scores"] >= 0) & (info["scores"] <= 1)).all()
    start = obs["state"].clone()
    obs, rewards, _, _, info = env.chunk_step(_actions(3))
    model = env.state_model
    path = model.rollout_chunk(start[None].expand(3, -1, -1), _actions(3), env._tasks_one_hot)
    assert torch.allclose(obs["state"], path[:, :, -1].mean(0), atol=1e-5)  # the members' mean
    assert torch.allclose(
        info["scores"][:, -1], model.success_prob(path[:, :, -1], env._tasks_one_hot), atol=1e-5
    )
    assert torch.allclose(rewards[:, -1], info["scores"][:, -1], atol=1e-5)  # chunk reward: the last score
    # the penalty takes lambda x disagreement off the chunk's reward; the halt ends doubted episodes
    penalised = make_env(cfg.model_copy(update={"uncertainty_penalty": 2.0}), 3, seed=0)
    penalised.reset()
    _, rewards_p, _, _, info_p = penalised.chunk_step(_actions(3))
    assert torch.allclose(
        rewards - rewards_p,
        torch.cat([torch.zeros(3, 3), 2.0 * info_p["uncertainty"][:, None]], 1),
        atol=1e-5,
    )
    halting = make_env(cfg.model_copy(update={"uncertainty_halt": 1e-9}), 3, seed=0)
    halting.reset()
    _, _, terminated, truncated, info_h = halting.chunk_step(_actions(3))
    assert (truncated | terminated).all() and info_h["halted"].any()
    assert info_h["episode"]["halted"].sum() >= 1


def test_env_frames_from_states_and_exact_restore(episodes, model_dirs, state_model_dirs):
    _, renders = state_model_dirs
    cfg = _cfg(episodes, model_dirs, state_model_config=renders, frames_from="state", max_episode_steps=12)
    env = make_env(cfg, 2, seed=0)
    env.reset()
    env.chunk_step(_actions(2))
    saved = env.get_state()
    obs, rewards, *_ = env.chunk_step(_actions(2, 1))
    assert obs["images"].shape == (2, 2, 32, 32, 3) and obs["images"].dtype == torch.uint8
    expected = env.render_states(obs["state"][:, None])[:, 0]
    # the frame the last imagined state shows (decoded in a different batch: rounding may differ by 1)
    assert (obs["images"].int() - expected.int()).abs().max() <= 1
    env.set_state(saved)
    again, rewards_again, *_ = env.chunk_step(_actions(2, 1))
    assert torch.equal(again["images"], obs["images"]) and torch.equal(rewards_again, rewards)


def test_state_keys_are_checked_before_start(episodes, model_dirs, state_model_dirs):
    plain, _ = state_model_dirs
    keys = _world_model_keys(episodes, model_dirs)
    with pytest.raises(
        ConfigError, match=r"env.train.outcome_source='state': needs env.train.state_model_config"
    ):
        load_config("ppo_cnn_metaworld", [*keys, "env.train.outcome_source=state"])
    with pytest.raises(
        ConfigError, match=r"env.train.uncertainty_halt=0.5: needs env.train.state_model_config"
    ):
        load_config("ppo_cnn_metaworld", [*keys, "env.train.uncertainty_halt=0.5"])
    with pytest.raises(ConfigError, match=r"env.train.frames_from='state':.*has no renderer"):
        load_config(
            "ppo_cnn_metaworld",
            [*keys, f"env.train.state_model_config={plain}", "env.train.frames_from=state"],
        )
    with pytest.raises(ConfigError, match=r"predicts chunks of 4 actions; env.train.num_action_chunks is 2"):
        load_config(
            "ppo_cnn_metaworld",
            [*keys, f"env.train.state_model_config={plain}", "env.train.num_action_chunks=2"],
        )


def test_state_residual_frames_keep_what_the_renderer_misses_in_the_start_frame(
    episodes, model_dirs, state_model_dirs
):
    _, renders = state_model_dirs
    cfg = _cfg(
        episodes, model_dirs, state_model_config=renders, frames_from="state_residual", max_episode_steps=12
    )
    env = make_env(cfg, 2, seed=0)
    start, _ = env.reset()
    # at the start state the rendered latents are the start frame's own
    latents = env._render_latents(start["state"][:, None])[:, 0]
    assert torch.allclose(latents, env.dynamics.encode(start["images"][:, None])[:, 0], atol=1e-4)
    obs, *_ = env.chunk_step(_actions(2))
    plain = env.state_model.render_latents(obs["state"], env._tasks_one_hot)
    shifted = plain + torch.from_numpy(env._start_offset)
    expected = env.dynamics.decode(shifted[:, None])[:, 0]
    assert (obs["images"].int() - expected.int()).abs().max() <= 1


def test_reset_to_an_observation_imagines_as_a_reset_to_its_episode_does(
    episodes, model_dirs, state_model_dirs
):
    """Starting from given frames and states (a simulator's start) is starting from the episode that shows them:
    the same observation, residual and imagined future; frames of the wrong shape are refused."""
    _, renders = state_model_dirs
    cfg = _cfg(
        episodes, model_dirs, state_model_config=renders, frames_from="state_residual", max_episode_steps=12
    )
    from_episode, from_obs = make_env(cfg, 2, seed=0), make_env(cfg, 2, seed=0)
    start, _ = from_episode.reset(reset_state_ids=torch.tensor([0, 1]))
    given, info = from_obs.reset_to(start["images"], start["state"])
    assert info["reset_state_ids"].tolist() == [-1, -1]
    assert torch.equal(given["images"], start["images"]) and torch.equal(given["state"], start["state"])
    a, ra, *_ = from_episode.chunk_step(_actions(2))
    b, rb, *_ = from_obs.chunk_step(_actions(2))
    assert (
        torch.equal(a["images"], b["images"]) and torch.equal(a["state"], b["state"]) and torch.equal(ra, rb)
    )
    with pytest.raises(ValueError, match=r"reset_to: frames \(2, 2, 16, 16, 3\)"):
        from_obs.reset_to(torch.zeros(2, 2, 16, 16, 3, dtype=torch.uint8), start["state"])


def test_success_reward_mode_pays_the_outcome_once(episodes, model_dirs, state_model_dirs):
    plain, _ = state_model_dirs
    cfg = _cfg(episodes, model_dirs, state_model_config=plain, outcome_source="state", chunk_reward=False,
               reward_mode="success", success_threshold=1e-6)  # fmt: skip
    env = make_env(cfg, 2, seed=0)
    env.reset()
    _, rewards, terminated, _, _ = env.chunk_step(_actions(2))
    assert terminated.all() and rewards.tolist() == [[1.0, 0, 0, 0]] * 2  # the first frame already succeeds
    never = make_env(cfg.model_copy(update={"success_threshold": 1.0}), 2, seed=0)
    never.reset()
    _, rewards, terminated, _, _ = never.chunk_step(_actions(2))
    assert not terminated.any() and (rewards == 0).all()


def test_state_reward_mode_pays_the_reward_heads_value_of_every_action(episodes, model_dirs, tmp_path):
    rewarded = str(_model(reward_head=True).save_pretrained(tmp_path / "rewarded"))
    cfg = _cfg(episodes, model_dirs, state_model_config=rewarded, outcome_source="state", chunk_reward=False,
               reward_mode="state_reward", reward_coef=2.0, ignore_terminations=True)  # fmt: skip
    env = make_env(cfg, 3, seed=0)
    start, _ = env.reset()
    _, rewards, terminated, _, _ = env.chunk_step(_actions(3))
    model = env.state_model
    path = model.rollout_chunk(start["state"][None].expand(3, -1, -1), _actions(3), env._tasks_one_hot)
    expected = 2.0 * model.reward_values(path, env._tasks_one_hot).mean(0)
    assert rewards.shape == (3, 4) and torch.allclose(rewards, expected, atol=1e-5) and not terminated.any()
    # reward_uncertainty_penalty: the members' mean less the penalty x their spread, where the heads disagree
    doubtful = make_env(
        cfg.model_copy(update={"reward_uncertainty_penalty": 0.5, "max_episode_steps": 4}), 3, seed=0
    )
    doubtful.reset()
    _, pessimistic, _, truncated, info = doubtful.chunk_step(_actions(3))
    values = model.reward_values(path, env._tasks_one_hot)
    spread = values.std(0, correction=0)
    assert (spread > 0).all() and torch.allclose(pessimistic, expected - spread, atol=1e-5)
    # the episode reports the heads' spread per action, in the reward's units (x reward_coef)
    assert truncated.all() and torch.allclose(
        info["episode"]["reward_spread"], 2.0 * spread.mean(1), atol=1e-5
    )
    on_start = model.reward_values(start["state"][None].expand(3, -1, -1), env._tasks_one_hot)
    assert torch.allclose(
        env.reward_spread_of_states(start["state"]), on_start.std(0, correction=0), atol=1e-6
    )
    # without ignore_terminations an episode that succeeds at its first frame earns nothing after it
    ending = make_env(
        cfg.model_copy(update={"ignore_terminations": False, "success_threshold": 1e-6}), 3, seed=0
    )
    ending.reset()
    _, rewards_end, terminated, _, _ = ending.chunk_step(_actions(3))
    first = env.offsets[0]  # actions up to the first frame
    assert terminated.all() and torch.allclose(rewards_end[:, :first], expected[:, :first], atol=1e-5)
    assert (rewards_end[:, first:] == 0).all()


def test_state_reward_mode_needs_a_model_with_a_reward_head(episodes, model_dirs, state_model_dirs):
    plain, _ = state_model_dirs
    keys = _world_model_keys(episodes, model_dirs)
    with pytest.raises(
        ConfigError, match=r"env.train.reward_mode='state_reward': needs env.train.state_model"
    ):
        load_config(
            "ppo_cnn_metaworld", [*keys, "env.train.reward_mode=state_reward", "env.train.chunk_reward=false"]
        )
    with pytest.raises(ConfigError, match=r"env.train.reward_mode='state_reward': .* has no reward head"):
        load_config("ppo_cnn_metaworld", [*keys, f"env.train.state_model_config={plain}",
                                      "env.train.reward_mode=state_reward", "env.train.chunk_reward=false"])  # fmt: skip
    with pytest.raises(
        ConfigError, match=r"reward_uncertainty_penalty=0.5: is used only with .*reward_mode=state_reward"
    ):
        load_config("ppo_cnn_metaworld", [*keys, f"env.train.state_model_config={plain}",
                                      "env.train.reward_uncertainty_penalty=0.5"])  # fmt: skip


def test_a_state_scored_env_needs_no_reward_model(episodes, model_dirs, state_model_dirs):
    plain, _ = state_model_dirs
    cfg = _cfg(
        episodes, model_dirs, state_model_config=plain, outcome_source="state", reward_model_config=None
    )
    env = make_env(cfg, 2, seed=0)
    env.reset()
    _, rewards, *_ = env.chunk_step(_actions(2))
    assert env.scorer is None and rewards.shape == (2, 4)
    keys = _world_model_keys(episodes, model_dirs, with_reward_model=False)
    with pytest.raises(ConfigError, match=r"env.train.reward_model_config=None: env_type world_model needs"):
        load_config("ppo_cnn_metaworld", keys)
    load_config(
        "ppo_cnn_metaworld",
        [*keys, f"env.train.state_model_config={plain}", "env.train.outcome_source=state"],
    )
