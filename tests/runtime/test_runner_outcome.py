"""``rl_metaworld_outcome`` as a user runs it, shrunk: whole episodes scored by their outcome, GRPO groups
(of 4 here, 8 in the config) on one layout, uniform groups dropped, filtered imitation with its replay,
and an exact resume."""

from pathlib import Path

import pytest

from tests.assets import REPO, assert_matches_sha256sums
from tests.runtime.jobs import run_and_read

pytestmark = pytest.mark.slow
SMALL = [
    "algorithm.num_group_envs=3",  # one layout per task
    "algorithm.group_size=4",  # x 4 samples = 12 envs
    "env.train.group_size=4",
    "env.train.max_episode_steps=24",
    "algorithm.n_chunk_steps=6",
    "actor.global_batch_size=36",
    "actor.micro_batch_size=36",
    "algorithm.imitation_replay_size=500",
    "env.eval.num_envs=3",
    "env.eval_episodes=3",
    "env.eval.max_episode_steps=24",
    "runner.val_check_interval=2",
    "runner.save_interval=2",
    "runner.progress_bar=false",
]


def test_shipped_start_matches_its_checksums():
    assert assert_matches_sha256sums(REPO / "assets" / "metaworld_outcome") >= 7


def test_outcome_job_trains_and_resumes_exactly(tmp_path: Path):
    full = run_and_read("rl_metaworld_outcome", tmp_path, "full", [*SMALL, "runner.max_steps=3"])
    assert [r["step"] for r in full] == [1, 2, 3]
    for row in full:
        assert 0.0 <= row["rollout/mixed_group_fraction"] <= 1.0
        assert row["env/return"] == row["env/success_once"]  # the reward is the outcome
        assert 0 < row["env/episode_steps"] <= 24 * 12
    assert "eval/success_once" in full[1]
    sizes = [r.get("train/actor/replay_size", 0.0) for r in full]
    assert sizes == sorted(sizes)  # the replay only grows (below its capacity)
    checkpoint = tmp_path / "full" / "checkpoints" / "global_step_2"
    resumed = run_and_read(
        "rl_metaworld_outcome",
        tmp_path,
        "resumed",
        [*SMALL, "runner.max_steps=3", f"runner.resume_dir={checkpoint}"],
    )
    assert [r["step"] for r in resumed] == [3]
    for key in (
        "env/success_once",
        "rollout/mixed_group_fraction",
        "env/episode_steps",
        "train/actor/fm_loss",
    ):
        if key in full[2]:
            assert resumed[0][key] == pytest.approx(full[2][key], rel=1e-6), key
