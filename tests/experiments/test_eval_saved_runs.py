"""eval_saved_runs.py evaluates each run's latest weights on the layouts asked for, and checks every run first."""

from __future__ import annotations

import json
import sys
from importlib import import_module
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch):
    """The script with the simulator evaluation replaced by a recorder."""
    module = import_module("experiments.harness.eval_saved_runs")
    calls = []

    def evaluate(cfg, weights, episodes, seed):
        calls.append((weights, cfg.env.eval.layout_seed, episodes, seed))
        return {task: 0.5 if weights is None else 0.75 for task in cfg.env.eval.tasks}

    monkeypatch.setattr(module, "evaluate", evaluate)
    module.calls = calls
    return module


def saved_run(root: Path, step: int) -> Path:
    """A run directory laid out as the runner saves it, with its latest checkpoint at ``step``."""
    rollout = root / "checkpoints" / f"global_step_{step}" / "rollout"
    rollout.mkdir(parents=True)
    (rollout / "model.safetensors").write_bytes(b"")
    (root / "checkpoints" / "latest").write_text(f"global_step_{step}")
    return root


def test_evaluates_latest_weights_on_the_layouts_asked_for(bench, monkeypatch, tmp_path, capsys):
    run = saved_run(tmp_path / "run", 30)
    out = tmp_path / "res.json"
    argv = ["x", "--runs", "imitation", str(run), "--layout-seed", "0", "--episodes", "5", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    weights = str(run / "checkpoints" / "global_step_30" / "rollout" / "model.safetensors")
    assert bench.calls == [(None, 0, 5, 0), (weights, 0, 5, 0)]
    assert json.loads(out.read_text())[str(run)]["reach-v3"] == 0.75
    assert "mean 75.0" in capsys.readouterr().out


def test_a_run_without_weights_stops_before_any_evaluation(bench, monkeypatch, tmp_path):
    good = saved_run(tmp_path / "good", 30)
    bad = tmp_path / "bad"
    (bad / "checkpoints").mkdir(parents=True)
    (bad / "checkpoints" / "latest").write_text("global_step_10")
    monkeypatch.setattr(sys, "argv", ["x", "--runs", str(good), str(bad), "--layout-seed", "0"])
    with pytest.raises(SystemExit, match="--runs .*bad: no rollout weights"):
        bench.main()
    assert bench.calls == []
