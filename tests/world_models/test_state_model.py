"""The state model: batched ensemble maths, training windows, its training CLI (it must learn a simple
dynamics and success rule), the renderer and its reward head; the world-model env it drives is tested in
test_state_model_env.py."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from tests.world_models.conftest import PROMPTS, VIEWS, tiny_dynamics, write_drift_episodes
from tests.world_models.test_env import _actions
from toolkits.episodes import Episode, EpisodeDataset, EpisodeWriter
from world_models.state_data import StateWindows
from world_models.state_model import EnsembleLinear, StateModel, StateModelConfig
from world_models.train_state_model import main

SMALL = ["model.hidden=32", "model.layers=2", "model.ensemble_size=3", "train.batch_size=16",
         "train.horizon=2", "train.log_interval=1", "train.warmup_steps=0"]  # fmt: skip


def _model(**kw) -> StateModel:
    torch.manual_seed(0)
    fields = {"state_dim": 39, "action_dim": 4, "action_chunk": 4, "prompts": sorted(PROMPTS.values()),
              "ensemble_size": 3, "hidden": 16, "layers": 2, **kw}  # fmt: skip
    return StateModel(StateModelConfig(**fields)).eval()


@pytest.fixture(scope="module")
def rule_episodes(tmp_path_factory) -> str:
    """Episodes of a known world: the first state entries move by 0.05 x the action, the task is solved
    once entry 0 passes 0.3 (the episode ends there, as Meta-World's do), and an action's reward is shaped
    by the state it leads to (10 x entry 0 + 2)."""
    root = str(tmp_path_factory.mktemp("rule_episodes"))
    writer = EpisodeWriter(root, info={"cameras": ["corner", "gripperPOV"], "image_size": 32})
    rng = np.random.default_rng(0)
    for i in range(48):
        task = list(PROMPTS)[i % 2]
        states, actions, success = [rng.uniform(-0.2, 0.2, 6).astype(np.float32)], [], []
        for _ in range(24):
            a = np.clip(rng.normal(0.4 if i % 3 else -0.4, 0.5, 4), -1, 1).astype(np.float32)
            s = states[-1].copy()
            s[:4] += 0.05 * a
            actions.append(a)
            states.append(s)
            success.append(bool(s[0] > 0.3))
            if success[-1]:
                break
        t = len(actions)
        meta = {"prompt": PROMPTS[task], "task": task, "success_once": bool(success[-1]), **VIEWS}
        images = rng.integers(0, 255, size=(t + 1, 2, 32, 32, 3), dtype=np.uint8)
        rewards = np.array([10 * x[0] + 2 for x in states[1:]], np.float32)
        writer.write(Episode(images, np.stack(states), np.stack(actions), rewards, np.array(success), meta))
    writer.close({})
    return root


def test_ensemble_linear_is_one_linear_layer_per_member():
    layer = EnsembleLinear(3, 5, 2)
    x = torch.randn(3, 4, 5)
    out = layer(x)
    for k in range(3):
        assert torch.allclose(out[k], x[k] @ layer.weight[k] + layer.bias[k], atol=1e-6)


def test_rollout_shapes_members_and_round_trip(tmp_path):
    model = _model()
    states = torch.randn(1, 5, 39).expand(3, -1, -1)
    tasks = model.task_one_hot([PROMPTS["reach-v3"]] * 5)
    path = model.rollout_chunk(states, _actions(5), tasks)
    assert path.shape == (3, 5, 4, 39)
    assert not torch.allclose(path[0], path[1])  # members differ: their disagreement is the filter's signal
    assert model.disagreement(path[:, :, -1]).shape == (5,) and (model.disagreement(path[:, :, -1]) > 0).all()
    assert torch.equal(model.disagreement(states), torch.zeros(5))
    prob = model.success_prob(path, tasks)
    assert prob.shape == (5, 4) and ((prob >= 0) & (prob <= 1)).all()
    loaded = StateModel.from_pretrained(model.save_pretrained(tmp_path / "sm"))
    assert torch.equal(loaded.rollout_chunk(states, _actions(5), tasks), path)
    with pytest.raises(ValueError, match="unknown prompts"):
        model.task_one_hot(["open the door"])
    with pytest.raises(ValueError, match="no reward head"):  # a model saved before reward heads existed
        model.reward_values(path, tasks)
    rewarded = _model(reward_head=True)
    assert rewarded.reward_values(path, tasks).shape == (3, 5, 4)
    again = StateModel.from_pretrained(rewarded.save_pretrained(tmp_path / "rewarded"))
    assert torch.equal(again.reward_values(path, tasks), rewarded.reward_values(path, tasks))


def test_shipped_state_models_match_their_checksums_and_load_strictly():
    """The shipped models (``state_outcome/model``, its refit on the 20-demonstration start's rollouts,
    ``state_outcome20/model``, and that one's refit on the both-frames start's, ``state_outcome20_both/model``)
    are whole and load into the current StateModel, with the renderer and reward head the dense recipes read."""
    from tests.assets import REPO, assert_matches_sha256sums

    names = ("state_outcome", "state_outcome20", "state_outcome20_both")
    roots = [REPO / "assets" / "world_models" / name for name in names]
    counts = [assert_matches_sha256sums(root) for root in roots]
    assert counts[0] >= 4 and counts[1:] == [2, 2]  # the first also ships the gauge's start states
    models = [StateModel.from_pretrained(root / "model") for root in roots]
    assert all(m.cfg == models[0].cfg for m in models)
    assert models[0].cfg.reward_head and models[0].cfg.latent_shape
    for a, b in zip(models, models[1:]):  # each refit moved the weights
        assert any(not torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_windows_line_up_actions_states_and_success(rule_episodes):
    episodes = EpisodeDataset(rule_episodes)
    data = StateWindows(episodes, [0], chunk=4, horizon=2)
    ep = episodes[0]
    t_len = len(ep.actions)
    assert len(data) == t_len
    b = data.batch(torch.tensor([0, t_len - 1]))
    assert torch.equal(b["state"][0], torch.from_numpy(ep.state[0]))
    assert torch.equal(b["actions"][0], torch.from_numpy(ep.actions[:8]))
    assert torch.equal(b["next_states"][0], torch.from_numpy(ep.state[1:9]))
    assert b["mask"][1].tolist() == [1] + [0] * 7  # the last step: one action, then padding
    assert b["success"][1, 0] == float(ep.success[-1]) and b["success"][1, 1:].sum() == 0
    assert torch.equal(b["reward"][0], torch.from_numpy(ep.rewards[:8]))  # the reward of each action
    assert b["reward"][1, 0] == float(ep.rewards[-1]) and b["reward"][1, 1:].sum() == 0
    assert (b["actions"][1, 1:] == 0).all() and torch.equal(
        b["next_states"][1, 0], torch.from_numpy(ep.state[-1])
    )


def test_learns_the_dynamics_and_the_success_rule(rule_episodes, tmp_path, capsys):
    out = tmp_path / "sm"
    args = [f"data.path={rule_episodes}", f"output_dir={out}", "data.holdout_fraction=0.25", *SMALL]
    assert main([*args, "train.steps=300", "train.lr=3e-3"]) == 0
    log = capsys.readouterr().out
    assert "state model step 300/300" in log and "held out" in log
    model = StateModel.from_pretrained(out / "model")
    metrics = dict(kv.split("=") for kv in log.split("held out: ")[1].splitlines()[0].split(", "))
    assert float(metrics["open_loop_rms"]) < 0.5 * float(metrics["stays_rms"])
    assert float(metrics["success_auc_real_states"]) > 0.9
    assert float(metrics["reward_r2_real_states"]) > 0.8  # the shaped reward, read off the state
    assert float(metrics["reward_r2_predicted_states"]) > 0.5  # ... and off the imagined states
    # the success rule: entry 0 above 0.3
    solved, unsolved = torch.zeros(1, 1, 6), torch.zeros(1, 1, 6)
    solved[..., 0], unsolved[..., 0] = 0.45, 0.0
    tasks = model.task_one_hot([PROMPTS["reach-v3"]])
    k = model.cfg.ensemble_size
    assert model.success_prob(solved.expand(k, -1, -1), tasks) > model.success_prob(
        unsolved.expand(k, -1, -1), tasks
    )
    with torch.no_grad():
        reward = model.reward_values(torch.cat([solved, unsolved], 1).expand(k, -1, -1), tasks).mean(0)
    assert abs(float(reward[0] - reward[1]) - 4.5) < 1.5  # 10 x (0.45 - 0), in the data's units


def test_renderer_trains_against_a_dynamics_models_vae(rule_episodes, tmp_path, capsys):
    dyn = tiny_dynamics().save_pretrained(tmp_path / "dyn")
    out = tmp_path / "sm"
    args = [f"data.path={rule_episodes}", f"output_dir={out}", "data.holdout_fraction=0.25", *SMALL]
    assert (
        main(
            [*args, "train.steps=2", f"render.dynamics_model_dir={dyn}", "render.steps=3", "render.hidden=16"]
        )
        == 0
    )
    log = capsys.readouterr().out
    assert "renderer step 3/3" in log and "PSNR" in log
    model = StateModel.from_pretrained(out / "model")
    assert model.cfg.latent_shape == list(tiny_dynamics().noise_shape()[1:])
    # warm start keeps the statistics and continues
    assert (
        main([*args, f"output_dir={tmp_path / 'b'}", f"init_model_dir={out / 'model'}", "train.steps=1"]) == 0
    )
    tuned = StateModel.from_pretrained(tmp_path / "b" / "model")
    assert torch.equal(tuned.delta_std, model.delta_std)


def test_latent_cache_encodes_each_episode_once_per_vae(rule_episodes, tmp_path, monkeypatch):
    from world_models.train_state_model import encoded_frames

    dyn, episodes, cache = tiny_dynamics(), EpisodeDataset(rule_episodes), str(tmp_path / "cache")
    calls, encode = [], dyn.encode
    monkeypatch.setattr(dyn, "encode", lambda images: calls.append(len(images)) or encode(images))
    plain = encoded_frames(dyn, episodes, [0, 1, 2], "full")
    calls.clear()
    first = encoded_frames(dyn, episodes, [0, 1, 2], "full", cache_dir=cache)
    assert calls and torch.equal(first["latents"], plain["latents"])
    calls.clear()
    again = encoded_frames(dyn, episodes, [0, 1, 2], "full", cache_dir=cache)  # read back, nothing encoded
    assert not calls and torch.equal(again["latents"], plain["latents"])
    with torch.no_grad():  # a changed denoiser leaves the latents and the entries as they are
        next(p for name, p in dyn.named_parameters() if not name.startswith("vae.")).add_(0.1)
    kept = encoded_frames(dyn, episodes, [0, 1, 2], "full", cache_dir=cache)
    assert not calls and torch.equal(kept["latents"], plain["latents"])
    with torch.no_grad():  # another VAE: its own entries, never the old ones
        next(dyn.vae.parameters()).add_(0.1)
    changed = encoded_frames(dyn, episodes, [0], "full", cache_dir=cache)
    assert calls and not torch.equal(changed["latents"], plain["latents"][: len(changed["latents"])])
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_a_reward_head_is_added_to_a_saved_model_and_trained_alone(rule_episodes, tmp_path, capsys):
    args = [f"data.path={rule_episodes}", "data.holdout_fraction=0.25", *SMALL]
    assert main([*args, f"output_dir={tmp_path / 'a'}", "model.reward_head=false", "train.steps=3"]) == 0
    headless = StateModel.from_pretrained(tmp_path / "a" / "model")
    assert not headless.cfg.reward_head
    capsys.readouterr()
    assert main([*args, f"output_dir={tmp_path / 'b'}", f"init_model_dir={tmp_path / 'a' / 'model'}",
                 "train.parts=reward_head", "train.steps=300", "train.lr=3e-3"]) == 0  # fmt: skip
    log = capsys.readouterr().out
    metrics = dict(kv.split("=") for kv in log.split("held out: ")[1].splitlines()[0].split(", "))
    assert float(metrics["reward_r2_real_states"]) > 0.8
    headed = StateModel.from_pretrained(tmp_path / "b" / "model")
    assert headed.cfg.reward_head and float(headed.reward_std) != 1.0  # the data's reward scale
    before, after = headless.state_dict(), headed.state_dict()
    assert all(torch.equal(before[key], after[key]) for key in before)  # everything else unchanged
    assert main([*args, f"output_dir={tmp_path / 'c'}", "train.parts=reward_head"]) == 2
    assert (
        "train.parts='reward_head': trains a head on a saved model: set init_model_dir"
        in capsys.readouterr().err
    )


@pytest.mark.slow
def test_a_focused_refit_learns_the_few_new_episodes_the_uniform_one_drowns(rule_episodes, tmp_path, capsys):
    """Six episodes in a new part of the state space where the world differs (the first entries move against the
    action) merged among the 48: a warm refit drawing half of each batch from them predicts their states better
    than one drawing uniformly, in the same steps."""
    from toolkits.episodes.merge import merge_datasets
    from world_models.state_eval import evaluate

    write_drift_episodes(
        str(tmp_path / "new"), -1.0, seed=1, n=6, steps=24, start_4=0.8
    )  # unvisited by the 48
    merge_datasets([rule_episodes, str(tmp_path / "new")], str(tmp_path / "merged"))
    args = ["data.holdout_fraction=0", *SMALL, "train.lr=3e-3"]
    assert (
        main([*args, f"data.path={rule_episodes}", f"output_dir={tmp_path / 'base'}", "train.steps=200"]) == 0
    )
    warm = [*args, f"data.path={tmp_path / 'merged'}", f"init_model_dir={tmp_path / 'base' / 'model'}",
            "train.steps=300"]  # fmt: skip
    assert main([*warm, f"output_dir={tmp_path / 'uniform'}"]) == 0
    capsys.readouterr()
    focus = [f"train.focus_sources=[{tmp_path / 'new'}]", "train.focus_fraction=0.5"]
    assert main([*warm, f"output_dir={tmp_path / 'focused'}", *focus]) == 0
    assert f"8 of every 16 windows from 144 of {tmp_path / 'new'}" in capsys.readouterr().out
    new = EpisodeDataset(str(tmp_path / "new"))
    windows = StateWindows(new, list(range(len(new))), chunk=4, horizon=2)
    rms = {
        name: evaluate(StateModel.from_pretrained(tmp_path / name / "model"), windows, 2)["open_loop_rms"]
        for name in ("uniform", "focused")
    }
    assert rms["focused"] < 0.7 * rms["uniform"], rms
    # a focus without sources, or on a dataset the data was not merged from, stops before training
    assert main([*warm, f"output_dir={tmp_path / 'x'}", "train.focus_fraction=0.5"]) == 2
    assert "train.focus_fraction=0.5: draws from train.focus_sources" in capsys.readouterr().err
    assert main([*warm, f"output_dir={tmp_path / 'x'}", *focus[1:], "train.focus_sources=[/elsewhere]"]) == 2
    assert "train.focus_sources='/elsewhere': not a dataset" in capsys.readouterr().err


def test_bad_config_is_one_line_and_exit_2(rule_episodes, tmp_path, capsys):
    assert main([f"output_dir={tmp_path}", "data.path=/no/such/episodes"]) == 2
    assert "data.path" in capsys.readouterr().err
    assert main([f"data.path={rule_episodes}", "render.dynamics_model_dir=/nowhere"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "render.dynamics_model_dir" in err
    (tmp_path / "file").write_text("")  # a cache that is a file stops before training, not at the renderer
    assert main([f"data.path={rule_episodes}", f"render.latent_cache={tmp_path / 'file'}"]) == 2
    err = capsys.readouterr().err
    assert "render.latent_cache='" in err and "a folder for the renderer's latents (this is a file)" in err
    assert main([f"data.path={rule_episodes}", "train.horizon=0"]) == 2
    assert "train.horizon" in capsys.readouterr().err
    assert main([f"data.path={rule_episodes}", "train.device=tpu"]) == 2
    assert "train.device" in capsys.readouterr().err
    if not torch.cuda.is_available():  # asking for a GPU that is not there stops before any data is read
        assert main([f"data.path={rule_episodes}", "train.device=cuda"]) == 2
        assert "train.device='cuda': no GPU is visible here" in capsys.readouterr().err


@pytest.mark.slow
def test_training_the_state_model_imports_no_diffusers():
    """Without a renderer the state model needs torch alone: ``world_models`` loads the video model's
    names on first use, so a GPU node without diffusers can still train and refit state models."""
    check = (
        "import sys; import world_models.train_state_model, world_models.state_model, world_models.state_data; "
        "assert 'diffusers' not in sys.modules; from world_models import DynamicsModel; "
        "assert 'diffusers' in sys.modules and DynamicsModel.__name__ == 'DynamicsModel'"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
