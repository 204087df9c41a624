"""plot_real_steps.py draws success against real env steps: one seed per line, or the mean of seeds."""

from __future__ import annotations

import json
import sys
from importlib import import_module
from pathlib import Path

import pytest


def _record(path: Path, curve: dict[str, list[float]] | None, steps_at: dict[str, int] | None, success=None):
    """An imagination_gain result.json: per saved step, the success of two tasks and the real steps so far."""
    path.mkdir(parents=True)
    record = {"success": dict(zip(["a", "b"], success or list(curve.values())[-1]))}
    if curve is not None:
        record |= {
            "curve": {s: dict(zip(["a", "b"], v)) for s, v in curve.items()},
            "real_env_steps_at": steps_at,
        }
        record["real_env_steps"] = steps_at[max(curve, key=int)]
    else:
        record["real_env_steps"] = 0
    (path / "result.json").write_text(json.dumps(record))
    return str(path)


def test_seeds_are_averaged_point_by_point_and_drawn_on_a_log_axis(tmp_path, monkeypatch, capsys):
    plot = import_module("experiments.harness.plot_real_steps")
    imitation = [
        _record(tmp_path / f"imitation{s}", None, None, success=[0.2 + 0.2 * s, 0.4]) for s in (0, 1)
    ]
    seeds = [
        _record(tmp_path / "co0", {"10": [0.4, 0.6], "20": [0.6, 0.6]}, {"10": 1000, "20": 2000}),
        _record(tmp_path / "co1", {"10": [0.2, 0.2], "20": [0.4, 0.4]}, {"10": 1200, "20": 2400}),
    ]
    real = _record(tmp_path / "real0", {"30": [0.5, 0.5]}, {"30": 216000})
    out = tmp_path / "fig.png"
    argv = ["plot", "--start", ",".join(imitation), "--runs", f"co={','.join(seeds)}", f"real={real}",
            "--out", str(out), "--log-x"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    plot.main()
    printed = capsys.readouterr().out
    # start: mean of (0.2+0.4)/2 and (0.4+0.4)/2 = 35%; co: (1100 steps, 35%), (2200 steps, 50%)
    assert "co: 0 steps -> 35.0%, 1100 steps -> 35.0%, 2200 steps -> 50.0%" in printed
    assert "real: 0 steps -> 35.0%, 216000 steps -> 50.0%" in printed
    from PIL import Image

    assert Image.open(out).size == (900, 560)


def test_seeds_with_different_evaluations_are_refused(tmp_path):
    plot = import_module("experiments.harness.plot_real_steps")
    a = _record(tmp_path / "a", {"10": [0.4, 0.6], "20": [0.6, 0.6]}, {"10": 1000, "20": 2000})
    b = _record(tmp_path / "b", {"20": [0.4, 0.4]}, {"20": 2400})
    with pytest.raises(SystemExit, match="as many evaluations"):
        plot.mean_points([a, b])
