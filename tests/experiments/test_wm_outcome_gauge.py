"""wm_outcome_gauge.py plays the same starts with the same policy noise in Meta-World and in imagination,
and scores the agreement with rank statistics that count ties fairly."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
RESET_EPISODES = ROOT / "assets" / "quickstart" / "reset_episodes"  # 2 episodes per quickstart task


@pytest.fixture(scope="module")
def gauge():
    return import_module("experiments.harness.wm_outcome_gauge")


def test_auc_and_spearman_count_ties_and_constants(gauge):
    labels = np.array([True, True, False, False])
    assert gauge.auc(np.array([0.9, 0.8, 0.1, 0.2]), labels) == 1.0
    assert gauge.auc(np.array([0.1, 0.2, 0.9, 0.8]), labels) == 0.0
    assert gauge.auc(np.ones(4), labels) == 0.5  # a constant score ranks nothing
    assert np.isnan(gauge.auc(np.arange(4.0), np.ones(4, bool)))  # one class: undefined
    assert gauge.spearman_or_zero(np.ones(3), np.arange(3.0)) == 0.0
    assert gauge.spearman_or_zero(np.arange(3.0), np.arange(3.0)) == pytest.approx(1.0)


def test_assign_starts_gives_each_group_one_start_and_drops_repeats(gauge):
    task_ids = np.array([0, 0, 1, 1, 0, 0, 1, 1])  # 4 groups of 2 samples, tasks alternating
    starts = {0: [(0, 10), (1, 11), (2, 12)], 1: [(0, 20)]}
    layouts, ep_ids, keep = gauge.assign_starts(task_ids, starts, samples=2, first=0)
    assert layouts.tolist() == [10, 10, 20, 20, 11, 11, 20, 20]
    assert ep_ids.tolist() == [0, 0, 0, 0, 1, 1, 0, 0]
    assert keep.tolist() == [True, True, True, True, True, True, False, False]  # task 1 has one start only
    layouts, _, keep = gauge.assign_starts(task_ids, starts, samples=2, first=2)
    assert layouts[:2].tolist() == [12, 12] and not keep[2:].any()


def test_same_starts_and_first_chunk_in_both_worlds(gauge, monkeypatch, capsys):
    """Real and imagined episodes start from the same frames, and the policy's first sampled chunk (same
    observation, same noise) is the same action in both; the tables come out for every arm."""
    played = []
    play_round = gauge.play_round

    def recording(*args, **kwargs):
        arms = play_round(*args, **kwargs)
        played.append(arms)
        return arms

    monkeypatch.setattr(gauge, "play_round", recording)
    argv = ["wm_outcome_gauge.py", "--config", "rl_release_video", "--starts", str(RESET_EPISODES), "--starts-per-task",
            "2", "--samples", "2", "--starts-per-round", "1", "--episode-steps", "8"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    gauge.main()
    assert len(played) == 2  # 2 rounds of one start per task
    for arms in played:
        real, imagined = arms["real"], arms["imagined"]
        assert torch.equal(real["start_images"], imagined["start_images"])
        assert torch.equal(real["actions"][:, :4], imagined["actions"][:, :4])
        assert not torch.equal(real["actions"][0::2, :4], real["actions"][1::2, :4])  # samples differ
        assert real["actions"].shape == (6, 8, 4)
        # Meta-World replays the imagined episodes' own actions
        assert torch.equal(arms[gauge.REPLAY_ARM]["actions"], imagined["actions"])
    out = capsys.readouterr().out
    assert "imagination against the real consequences of its own actions" in out
    assert "6 starts x 2 samples, 8-step episodes" in out
    for arm in gauge.ARMS:
        assert f"| {arm} |" in out


def test_with_a_state_model_the_classifier_arm_and_the_filter_split_are_reported(
    gauge, monkeypatch, capsys, tmp_path
):
    """A state model trained (briefly) on the reset episodes: imagined states, success and rendered frames
    come from it; the success classifier and the reward head on the real states are arms and the
    disagreement split prints."""
    from world_models.config import StateModelJob
    from world_models.train_state_model import train_state_model

    job = StateModelJob.model_validate({
        "data": {"path": str(RESET_EPISODES), "holdout_fraction": 0.0}, "output_dir": str(tmp_path / "sm"),
        "model": {"hidden": 16, "layers": 1, "ensemble_size": 2}, "train": {"steps": 2, "batch_size": 4, "horizon": 1},
        "render": {"dynamics_model_dir": str(ROOT / "assets" / "world_models" / "tiny_3tasks"), "steps": 1, "hidden": 16},
    })  # fmt: skip
    model = train_state_model(job, log=lambda *_: None)
    argv = ["wm_outcome_gauge.py", "--config", "rl_release_video", "--starts", str(RESET_EPISODES), "--starts-per-task",
            "1", "--samples", "2", "--episode-steps", "8", f"env.train.state_model_config={model}",
            "env.train.outcome_source=state", "env.train.frames_from=state", "env.train.success_threshold=0.5"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    gauge.main()
    out = capsys.readouterr().out
    assert f"| {gauge.STATE_ARM} |" in out and "where the members agree" in out
    for arm in gauge.HEAD_ARMS:  # the model has a reward head (on by default)
        assert f"| {arm} |" in out


class _WholeEpisodes:
    """Two envs that never terminate (ignore_terminations) and report success when truncated."""

    num_envs, chunk = 2, 4

    def __init__(self):
        self.calls = 0

    def chunk_step(self, chunk):
        self.calls += 1
        done = self.calls == 2
        info = {"episode": {"env_ids": torch.tensor([0, 1]), "success_once": torch.tensor([True, False])}}
        obs = {"images": torch.zeros(2, 1, 8, 8, 3), "state": torch.zeros(2, 3), "prompt": ["a", "b"]}
        return (
            obs,
            torch.ones(2, 4),
            torch.zeros(2, dtype=torch.bool),
            torch.full((2,), done),
            info if done else {},
        )


def test_episodes_that_ignore_terminations_take_success_from_the_episode_record(gauge):
    obs = {"images": torch.zeros(2, 1, 8, 8, 3), "state": torch.zeros(2, 3), "prompt": ["a", "b"]}
    out = gauge.play(_WholeEpisodes(), obs, lambda k, o: torch.zeros(2, 4, 4), 16, scorer=None)
    assert out["success"].tolist() == [True, False] and out["return"].tolist() == [8.0, 8.0]
