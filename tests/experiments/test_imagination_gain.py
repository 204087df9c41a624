"""imagination_gain.py keeps each run's result: a rerun with more arms trains only the new ones."""

from __future__ import annotations

import json
import sys
from importlib import import_module
from pathlib import Path

import pytest

from tests.assets import write_complete_checkpoint


@pytest.fixture
def bench(monkeypatch):
    """The benchmark module with train/evaluate replaced by recorders (no training, no simulator)."""
    module = import_module("experiments.harness.imagination_gain")
    calls: dict[str, list] = {"train": [], "evaluate": [], "env_type": [], "resume_dir": []}

    def train(cfg):
        name = cfg.runner.logger.experiment_name
        calls["train"].append(name)
        calls["env_type"].append(cfg.env.train.env_type)
        calls["resume_dir"].append(("train", cfg.runner.resume_dir))
        every = cfg.runner.save_interval
        steps = range(every, cfg.runner.max_steps + 1, every)
        return (
            [(s, f"weights-of-{name}" + ("" if s == cfg.runner.max_steps else f"@{s}")) for s in steps],
            1.0,
            {s: 0 for s in steps},
        )

    def evaluate(cfg, weights, episodes, seed):
        calls["evaluate"].append(weights)
        calls["resume_dir"].append(("evaluate", cfg.runner.resume_dir))
        return {task: 0.5 if weights is None else 0.75 for task in cfg.env.eval.tasks}

    monkeypatch.setattr(module, "train", train)
    monkeypatch.setattr(module, "evaluate", evaluate)
    module.calls = calls
    return module


def run_main(bench, monkeypatch, out: Path, *extra: str) -> None:
    argv = "imagination_gain.py --config rl_release_grpo --seeds 0 --no-real-ppo".split()
    monkeypatch.setattr(sys, "argv", [*argv, "--out", str(out), *extra])
    bench.main()


def test_rerun_reuses_finished_runs_and_runs_only_new_ones(bench, monkeypatch, tmp_path):
    run_main(bench, monkeypatch, tmp_path)
    assert bench.calls["train"] == ["wm_seed0"]
    assert bench.calls["evaluate"] == [None, "weights-of-wm_seed0"]
    run_main(bench, monkeypatch, tmp_path, "--controls", "reverse")
    assert bench.calls["train"] == ["wm_seed0", "reverse_seed0"]  # imitation and the world-model arm reused
    results = json.loads((tmp_path / "results.json").read_text())
    assert list(results["runs"]) == ["imitation", "world model", "control: reverse", "real simulator"]
    assert all(len(results["runs"][arm]) == 1 for arm in ["imitation", "world model", "control: reverse"])


def test_changed_override_reruns_the_arm_but_reuses_imitation(bench, monkeypatch, tmp_path):
    run_main(bench, monkeypatch, tmp_path)
    run_main(bench, monkeypatch, tmp_path, "actor.optim.lr=1e-4")
    assert bench.calls["train"] == ["wm_seed0", "wm_seed0"]
    assert bench.calls["evaluate"] == [None, "weights-of-wm_seed0", "weights-of-wm_seed0"]
    record = json.loads((tmp_path / "wm_seed0" / "result.json").read_text())
    assert record["key"]["config"]["actor"]["optim"]["lr"] == 1e-4


def test_curve_every_evaluates_each_saved_step_and_prints_the_curve(bench, monkeypatch, tmp_path, capsys):
    run_main(bench, monkeypatch, tmp_path, "--steps", "4", "--curve-every", "2")
    assert bench.calls["evaluate"] == [None, "weights-of-wm_seed0@2", "weights-of-wm_seed0"]
    record = json.loads((tmp_path / "wm_seed0" / "result.json").read_text())
    assert sorted(record["curve"]) == ["2", "4"] and record["key"]["config"]["runner"]["save_interval"] == 2
    out = capsys.readouterr().out
    assert "| 0 | 50.0 |" in out and "| 2 | 75.0 ± 0.0 |" in out and "| 4 | 75.0 ± 0.0 |" in out


def test_interrupted_run_leaves_no_record(bench, tmp_path):
    path = str(tmp_path / "arm" / "result.json")

    def crash():
        raise RuntimeError("killed midway")

    with pytest.raises(RuntimeError):
        bench.reuse_or_run(path, {"a": 1}, crash)
    assert not Path(path).exists()
    assert bench.reuse_or_run(path, {"a": 1}, lambda: {"success": 1})["success"] == 1
    assert bench.reuse_or_run(path, {"a": 1}, crash)["success"] == 1  # reused, crash not called


def test_the_real_arm_trains_in_meta_world(bench, monkeypatch, tmp_path):
    argv = ["imagination_gain.py", "--config", "rl_release_grpo", "--seeds", "0", "--out", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    assert bench.calls["train"] == ["wm_seed0", "real_seed0"]
    assert bench.calls["env_type"] == ["world_model", "metaworld"]


def test_a_recipe_whose_env_group_is_swapped_trains_its_real_arm_in_meta_world(bench, monkeypatch, tmp_path):
    """rl_metaworld_outcome_wm picks its world model by the env group, so the real arm's swap takes."""
    argv = "imagination_gain.py --config rl_metaworld_outcome_wm --seeds 0 --steps 2".split()
    monkeypatch.setattr(sys, "argv", [*argv, "--out", str(tmp_path)])
    bench.main()
    assert bench.calls["env_type"] == ["world_model", "metaworld"]


def test_a_real_arm_that_would_still_train_in_the_world_model_stops_before_any_work(
    bench, monkeypatch, tmp_path
):
    """A job that sets env.train.env_type itself keeps it after the env group swap: stopped before any work."""
    argv = "imagination_gain.py --config rl_release_grpo --seeds 0".split()
    extra = ["--out", str(tmp_path), "env.train.env_type=world_model"]
    monkeypatch.setattr(sys, "argv", [*argv, *extra])
    with pytest.raises(SystemExit, match="would still train in the world model.*--no-real-ppo"):
        bench.main()
    assert bench.calls["train"] == [] and bench.calls["evaluate"] == []


def test_a_resumed_arm_resumes_but_its_imitation_start_is_only_evaluated(bench, monkeypatch, tmp_path):
    """The imitation config drops runner.resume_dir: a co-evolution's resume is checked against the rounds
    of the arm's own log dir, which the imitation config does not name (it stopped a resumed seed at once)."""
    step = write_complete_checkpoint(tmp_path / "run" / "checkpoints" / "global_step_3", 3)
    run_main(bench, monkeypatch, tmp_path / "out", f"runner.resume_dir={step}")
    assert bench.calls["resume_dir"] == [("evaluate", None), ("train", str(step)), ("evaluate", None)]
