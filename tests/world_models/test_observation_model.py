"""The observation model (``model.latent_components``): a state model whose state is what a robot records
(proprioception and the principal components of the frames' VAE latents), trained on the episodes' outcomes; its
training CLI in the observation-only setting and what that setting refuses; the world-model env imagining with it;
the job check that lets it, and no state model of simulator state, into an observation-only job."""

from __future__ import annotations

import imageio
import pytest
import torch

import world_models.env  # noqa: F401 - registers env_type world_model
from policy_and_value.config import load_config
from policy_and_value.envs import make_env
from tests.world_models.conftest import PROMPTS, tiny_dynamics
from tests.world_models.test_env import _actions, _cfg
from tests.world_models.test_state_model import SMALL, rule_episodes  # noqa: F401 - the fixture
from toolkits.base.errors import ConfigError
from toolkits.episodes import EpisodeDataset
from world_models.state_data import StateWindows
from world_models.state_model import StateModel, StateModelConfig
from world_models.train_state_model import main

OBSERVATION = ["setting=observation_only", "data.state_type=proprio", "model.reward_head=false",
               "train.success_labels=episode_end", "model.latent_components=3"]  # fmt: skip


def test_episode_end_labels_are_the_outcome_on_the_last_action_alone(rule_episodes):  # noqa: F811
    data = EpisodeDataset(rule_episodes)
    ids = list(range(len(data)))
    steps = StateWindows(data, ids, 4, 2, "proprio")
    outcome = StateWindows(data, ids, 4, 2, "proprio", success_labels="episode_end")
    assert outcome.states.shape[1] == 4  # proprioception only
    ends = outcome.success.nonzero().flatten()
    successes = sum(bool(e["success_once"]) for e in data.entries)
    assert len(ends) == successes > 0  # one positive an episode that succeeded, on its last action
    assert torch.equal(outcome.success, steps.success)  # these episodes end at success, as Meta-World's do


def test_an_observation_model_trains_on_frames_proprio_and_outcomes(rule_episodes, tmp_path, capsys):  # noqa: F811
    dyn = tiny_dynamics().save_pretrained(tmp_path / "dyn")
    args = [f"data.path={rule_episodes}", f"output_dir={tmp_path / 'om'}", "data.holdout_fraction=0.25",
            f"render.dynamics_model_dir={dyn}", "train.steps=3", *SMALL, *OBSERVATION]  # fmt: skip
    assert main(args) == 0
    log = capsys.readouterr().out
    assert "3 components keep" in log and "frames from its components PSNR" in log
    model = StateModel.from_pretrained(tmp_path / "om" / "model")
    assert model.cfg.latent_components == 3 and model.proprio_dim == 4 and model.cfg.state_dim == 7
    assert not model.cfg.reward_head
    # the components reproduce a frame's latents as well as 3 axes can: the mean frame exactly
    latents = model.latent_mean.reshape(1, *model.cfg.latent_shape)
    state = model.observe(torch.zeros(1, 4), latents)
    assert torch.allclose(state[:, 4:], torch.zeros(1, 3), atol=1e-5)
    assert torch.allclose(model.render_latents(state, torch.zeros(1, 2)), latents, atol=1e-5)


@pytest.mark.parametrize(
    "override, key",
    [
        ("model.latent_components=0", "model.latent_components=0"),
        ("train.success_labels=steps", "train.success_labels='steps'"),
        ("model.reward_head=true", "model.reward_head=True"),
        ("data.state_type=full", "data.state_type='full'"),
    ],
)
def test_the_observation_only_setting_refuses_what_a_robot_does_not_record(
    rule_episodes,  # noqa: F811
    tmp_path,
    capsys,
    override,
    key,
):
    dyn = tiny_dynamics().save_pretrained(tmp_path / "dyn")
    args = [f"data.path={rule_episodes}", f"output_dir={tmp_path / 'om'}", f"render.dynamics_model_dir={dyn}",
            *SMALL, *OBSERVATION, override]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and "a robot does not record" in err[0]
    assert not (tmp_path / "om").exists()


@pytest.fixture(scope="module")
def observation_model_dir(tmp_path_factory) -> str:
    """An untrained observation model of the test dynamics model's VAE: 4 proprio numbers, 3 components."""
    torch.manual_seed(0)
    shape = list(tiny_dynamics().noise_shape()[1:])
    cfg = StateModelConfig(
        state_dim=7, action_dim=4, action_chunk=4, prompts=sorted(PROMPTS.values()), ensemble_size=3, hidden=16,
        layers=2, latent_shape=shape, latent_components=3,
    )  # fmt: skip
    model = StateModel(cfg)
    model.fit_latent_basis(torch.randn(40, *shape))
    return str(model.save_pretrained(tmp_path_factory.mktemp("obs_model") / "model"))


def _observation_env(episodes, model_dirs, model_dir, **kw):
    keys = {"state_model_config": model_dir, "state_type": "proprio", "outcome_source": "state",
            "frames_from": "state_residual", "reward_model_config": None, "max_episode_steps": 12, **kw}  # fmt: skip
    cfg = _cfg(episodes, model_dirs, **keys)
    return make_env(cfg, 2, seed=0)


def test_the_env_imagines_from_the_start_frame_and_shows_proprio_and_decoded_frames(
    episodes, model_dirs, observation_model_dir
):
    env = _observation_env(episodes, model_dirs, observation_model_dir)
    obs, _ = env.reset()
    assert obs["state"].shape == (2, 4) and env.spec.state_dim == 4  # the policy sees proprioception
    # every member starts from the start frame's encoding and the recorded proprioception
    expected = env.observed_states(obs)
    assert torch.allclose(torch.from_numpy(env._members), expected[None].expand(3, -1, -1), atol=1e-5)
    start = torch.from_numpy(env._members[0]).clone()
    obs, rewards, _, _, info = env.chunk_step(_actions(2))
    path = env.state_model.rollout_chunk(start[None].expand(3, -1, -1), _actions(2), env._tasks_one_hot)
    assert torch.allclose(obs["state"], path[:, :, -1].mean(0)[:, :4], atol=1e-5)
    assert obs["images"].shape == (2, 2, 32, 32, 3) and obs["images"].dtype == torch.uint8
    assert torch.allclose(
        info["scores"][:, -1], env.state_model.success_prob(path[:, :, -1], env._tasks_one_hot)
    )


def test_prediction_videos_show_an_observation_models_decoded_frames_and_success_score(
    episodes, model_dirs, observation_model_dir, tmp_path
):
    out = tmp_path / "wm_pred"
    env = _observation_env(episodes, model_dirs, observation_model_dir, visualize_wm_pred=True, chunk_reward=False,
                           reward_mode="success", dynamics_model_output_path=str(out))  # fmt: skip
    env.reset()
    for _ in range(3):  # 12 steps: the episodes end and their videos are written
        env.chunk_step(_actions(2))
    videos = sorted(out.glob("*.mp4"))
    assert len(videos) == 2 and all(len(imageio.mimread(v)) == 1 + 3 * 4 for v in videos)


def test_an_observation_model_must_draw_and_score_the_frames(episodes, model_dirs, observation_model_dir):
    with pytest.raises(ValueError, match="is an observation model: it draws the frames"):
        _observation_env(episodes, model_dirs, observation_model_dir, frames_from="dynamics")


def test_reobserved_members_go_on_from_the_code_of_the_frame_the_policy_sees(
    episodes, model_dirs, observation_model_dir
):
    drifting = _observation_env(episodes, model_dirs, observation_model_dir)
    env = _observation_env(episodes, model_dirs, observation_model_dir, reobserve_frames=True)
    for e in (drifting, env):
        e.reset()
    actions = _actions(2)
    drifted, _, _, _, _ = drifting.chunk_step(actions)
    obs, _, _, _, info = env.chunk_step(actions)
    assert torch.equal(obs["images"], drifted["images"])  # the same first chunk drawn
    p = env.state_model.proprio_dim
    members = torch.from_numpy(env._members)
    seen = env.observed_states(obs)  # the code of the frame shown, with each env's proprioception
    assert torch.allclose(members[:, :, p:], seen[None, :, p:].expand_as(members[:, :, p:]), atol=1e-5)
    assert torch.equal(members[:, :, :p], torch.from_numpy(drifting._members)[:, :, :p])  # own proprioception
    assert not torch.allclose(torch.from_numpy(drifting._members)[:, :, p:], members[:, :, p:], atol=1e-3)
    assert info["scores"].shape == (2, 4)


def test_reobserving_needs_an_observation_model_drawing_the_frames(episodes, model_dirs, tmp_path):
    dyn, rm = model_dirs
    plain = StateModel(
        StateModelConfig(state_dim=4, action_dim=4, action_chunk=4, prompts=sorted(PROMPTS.values()),
                         latent_shape=list(tiny_dynamics().noise_shape()[1:]), render_hidden=8)
    ).save_pretrained(tmp_path / "plain")  # fmt: skip
    common = ["env.train.env_type=world_model", f"env.train.dynamics_model_config={dyn}",
              f"env.train.dynamics_model_image_root={episodes}", "env.train.tasks=[reach-v3,push-v3]",
              "env.train.image_size=32", "env.train.reobserve_frames=true"]  # fmt: skip
    drawn_by_a_plain_model = ["env.train.reward_model_config=null", "env.train.outcome_source=state",
                              "env.train.frames_from=state_residual", f"env.train.state_model_config={plain}"]  # fmt: skip
    with pytest.raises(ConfigError, match=r"env.train.reobserve_frames=True: needs an observation model"):
        load_config("ppo_cnn_metaworld", [*common, *drawn_by_a_plain_model])
    with pytest.raises(
        ConfigError, match=r"env.train.reobserve_frames=True: needs env.train.state_model_config"
    ):
        load_config("ppo_cnn_metaworld", [*common, f"env.train.reward_model_config={rm}"])


def test_an_observation_only_job_takes_an_observation_model_and_no_state_model(
    episodes, model_dirs, observation_model_dir, tmp_path
):
    dyn, _ = model_dirs
    plain = StateModel(
        StateModelConfig(
            state_dim=4,
            action_dim=4,
            action_chunk=4,
            prompts=sorted(PROMPTS.values()),
            latent_shape=list(tiny_dynamics().noise_shape()[1:]),
            render_hidden=8,
        )
    ).save_pretrained(tmp_path / "plain")
    keys = ["setting=observation_only", "env.train.env_type=world_model", f"env.train.dynamics_model_config={dyn}",
            f"env.train.dynamics_model_image_root={episodes}", "env.train.reward_model_config=null",
            "env.train.outcome_source=state", "env.train.frames_from=state_residual", "env.train.reward_mode=success",
            "env.train.state_type=proprio", "env.eval.state_type=proprio", "env.train.tasks=[reach-v3,push-v3]",
            "env.train.image_size=32"]  # fmt: skip
    cfg = load_config("ppo_cnn_metaworld", [*keys, f"env.train.state_model_config={observation_model_dir}"])
    assert cfg.setting == "observation_only"
    with pytest.raises(ConfigError, match=r"env.train.state_model_config=.*predicts simulator state"):
        load_config("ppo_cnn_metaworld", [*keys, f"env.train.state_model_config={plain}"])


def _recording(root, outcomes) -> str:
    """Episodes as the policy server records them: one per outcome (True, False, None: unknown), 4 proprio numbers."""
    import numpy as np

    from toolkits.episodes import Episode, EpisodeWriter

    rng, writer = (
        np.random.default_rng(0),
        EpisodeWriter(str(root), info={"cameras": ["corner", "gripperPOV"]}),
    )
    for i, outcome in enumerate(outcomes):
        task = list(PROMPTS)[i % 2]
        t = 12
        meta = {"prompt": PROMPTS[task], "task": task, "success_once": outcome, "cameras": ["corner", "gripperPOV"],
                "image_size": 32}  # fmt: skip
        writer.write(Episode(rng.integers(0, 255, (t + 1, 2, 32, 32, 3), dtype=np.uint8),
                             rng.normal(size=(t + 1, 4)).astype(np.float32), rng.uniform(-1, 1, (t, 4)).astype(np.float32),
                             np.zeros(t, np.float32), np.zeros(t, bool), meta))  # fmt: skip
    writer.close({})
    return str(root)


def test_a_recording_without_an_outcome_trains_the_dynamics_but_not_the_success_head(tmp_path):
    root = _recording(tmp_path / "rec", [True, False, None, True])
    windows = StateWindows(EpisodeDataset(root), [0, 1, 2, 3], 4, 2, "proprio", success_labels="episode_end")
    per_episode = windows.labelled.reshape(4, -1)  # every episode has 12 actions: equal padded lengths
    assert per_episode[:, 0].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert int(windows.success.sum()) == 2  # the two that succeeded, on their last action
    dyn = tiny_dynamics().save_pretrained(tmp_path / "dyn")
    args = [f"data.path={root}", f"output_dir={tmp_path / 'om'}", "data.holdout_fraction=0", "train.steps=2",
            f"render.dynamics_model_dir={dyn}", *SMALL, *OBSERVATION]  # fmt: skip
    assert main(args) == 0
    unknown = _recording(tmp_path / "unknown", [None, None])
    with pytest.raises(SystemExit, match="no training episode has an outcome"):
        main([f"data.path={unknown}", *args[1:]])


def test_a_pessimistic_success_is_the_members_mean_less_their_spread(
    episodes, model_dirs, observation_model_dir
):
    plain = _observation_env(episodes, model_dirs, observation_model_dir)
    doubting = _observation_env(episodes, model_dirs, observation_model_dir, success_uncertainty_penalty=2.0)
    for env in (plain, doubting):
        env.reset()
    _, _, _, _, info = plain.chunk_step(_actions(2))
    _, _, _, _, doubted = doubting.chunk_step(_actions(2))
    path = torch.from_numpy(plain._members)[:, :, None]  # the members' states at the chunk's end
    probs = torch.sigmoid(plain.state_model.success_logits(path, plain._tasks_one_hot))[:, :, 0]
    expected = (probs.mean(0) - 2.0 * probs.std(0, correction=0)).clamp(min=0.0)
    assert torch.allclose(info["scores"][:, -1], probs.mean(0), atol=1e-5)
    assert torch.allclose(doubted["scores"][:, -1], expected, atol=1e-5)
    with pytest.raises(
        ConfigError, match=r"success_uncertainty_penalty=1.0: is used only with env.train.outcome_source"
    ):
        load_config("ppo_cnn_metaworld", [f"env.train.{k}" for k in ("env_type=world_model",
                    f"dynamics_model_config={model_dirs[0]}", f"dynamics_model_image_root={episodes}",
                    f"reward_model_config={model_dirs[1]}", "success_uncertainty_penalty=1.0")])  # fmt: skip


def test_an_observation_model_redraws_recorded_frames_as_imagination_draws_them(
    episodes, model_dirs, observation_model_dir
):
    from world_models.render_episodes import render_episode

    env = _observation_env(episodes, model_dirs, observation_model_dir, tasks=["reach-v3"])
    env = type(env)(env.cfg.model_copy(update={"num_envs": 1, "group_size": 1}), 1, seed=0)
    ep = EpisodeDataset(episodes)[0]
    drawn = render_episode(env, ep, batch=4)
    assert drawn.images.shape == ep.images.shape and drawn.images.dtype == ep.images.dtype
    assert (drawn.actions == ep.actions).all() and (drawn.state == ep.state).all()
    # the first frame is the start frame's own latents decoded (state_residual): the VAE's reconstruction
    first = torch.from_numpy(ep.images[:1])
    recon = env.dynamics.decode(env.dynamics.encode(first[:, None]))[0]
    assert torch.equal(torch.from_numpy(drawn.images[:1]), recon)
    assert not (drawn.images[1:] == drawn.images[:1]).all()  # later frames follow their own encodings
