"""world_models.render_episodes redraws an episode dataset's frames with the state model's renderer, as
imagination draws them, and keeps everything else of each episode."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
RESET_EPISODES = ROOT / "assets" / "quickstart" / "reset_episodes"  # 2 episodes per quickstart task
DYNAMICS = ROOT / "assets" / "world_models" / "tiny_3tasks"


@pytest.fixture(scope="module")
def state_model(tmp_path_factory) -> str:
    """A state model with a renderer, trained for a step on the quickstart's reset episodes."""
    from world_models.config import StateModelJob
    from world_models.train_state_model import train_state_model

    out = tmp_path_factory.mktemp("sm")
    job = StateModelJob.model_validate({
        "data": {"path": str(RESET_EPISODES), "holdout_fraction": 0.0}, "output_dir": str(out),
        "model": {"hidden": 16, "layers": 1, "ensemble_size": 2}, "train": {"steps": 2, "batch_size": 4, "horizon": 1},
        "render": {"dynamics_model_dir": str(DYNAMICS), "steps": 1, "hidden": 16},
    })  # fmt: skip
    return str(train_state_model(job, log=lambda *_: None))


def test_frames_are_redrawn_from_the_states_and_the_rest_is_kept(state_model, tmp_path, monkeypatch, capsys):
    from policy_and_value.config import load_config
    from toolkits.episodes.format import EpisodeDataset
    from world_models import render_episodes
    from world_models.dynamics_model import DynamicsModel

    out = tmp_path / "rendered"
    argv = ["render_episodes", "--config", "rl_release_video", "--data", str(RESET_EPISODES), "--out", str(out),
            f"env.train.state_model_config={state_model}", "env.train.frames_from=state_residual",
            "env.train.outcome_source=state", "env.train.reward_model_config=null"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    render_episodes.main()
    assert f"6 episodes redrawn into {out}" in capsys.readouterr().out
    source, rendered = EpisodeDataset(str(RESET_EPISODES)), EpisodeDataset(str(out))
    assert rendered.info["rendered_from"] == str(RESET_EPISODES)
    vae = DynamicsModel.from_pretrained(str(DYNAMICS))
    for i in range(len(source)):
        a, b = source[i], rendered[i]
        assert b.images.shape == a.images.shape and b.images.dtype == np.uint8
        for key in ("state", "actions", "rewards", "success"):
            assert np.array_equal(getattr(a, key), getattr(b, key))
        assert b.meta == a.meta
        assert not np.array_equal(a.images[1:], b.images[1:])  # a 1-step renderer does not draw the camera
        # state_residual: the first frame is the start frame's own latents, decoded (the VAE's reconstruction)
        with torch.no_grad():
            first = vae.decode(vae.encode(torch.from_numpy(a.images[None, :1])))[0, 0].numpy()
        assert np.abs(first.astype(int) - b.images[0].astype(int)).max() <= 1

    with pytest.raises(FileExistsError, match="exists; choose a new directory"):
        render_episodes.render_dataset(load_config("rl_release_video"), str(RESET_EPISODES), str(out))


def test_a_world_model_env_without_a_renderer_is_refused_before_any_work(tmp_path):
    from policy_and_value.config import load_config
    from world_models.render_episodes import render_dataset

    with pytest.raises(SystemExit, match="frames_from state or state_residual"):
        render_dataset(load_config("rl_release_video"), str(RESET_EPISODES), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
