"""coevolution_model_error.py scores each round's real rollouts with the initial model, the model the round's RL
trained in and the model refitted on them."""

from __future__ import annotations

from importlib import import_module

from tests.world_models.conftest import write_drift_episodes
from world_models.train_state_model import main as train

SMALL = ["model.hidden=32", "model.layers=2", "model.ensemble_size=2", "train.batch_size=16", "train.horizon=2",
         "train.warmup_steps=0", "train.lr=3e-3", "data.holdout_fraction=0"]  # fmt: skip


def test_each_rounds_rollouts_are_scored_by_the_models_before_and_after_its_refit(tmp_path, capsys):
    """The initial model learnt one world; round 1's rollouts come from the reversed one, and the model refitted on
    them predicts them better than the initial one; round 2's rows score the model round 1 left, too."""
    bench = import_module("experiments.harness.coevolution_model_error")
    base = write_drift_episodes(str(tmp_path / "base"), 1.0, seed=0, n=8, steps=16)
    assert train([*SMALL, f"data.path={base}", f"output_dir={tmp_path / 'initial'}", "train.steps=150"]) == 0
    root = tmp_path / "run" / "coevolution"
    for r in (1, 2):
        here = root / f"round_{r}"
        data = write_drift_episodes(str(here / "episodes"), -1.0, seed=r, n=8, steps=16)
        assert train([*SMALL, f"data.path={data}", f"output_dir={here / 'state_model'}", "train.steps=150",
                      f"init_model_dir={tmp_path / 'initial' / 'model'}"]) == 0  # fmt: skip
    capsys.readouterr()
    bench.main(
        ["--run", str(tmp_path / "run"), "--initial", str(tmp_path / "initial" / "model"), "--horizon", "2"]
    )
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()[2:]]
    assert [(row[0], row[2]) for row in rows] == [
        ("| 1", "initial"), ("| 1", "after round 1"),
        ("| 2", "initial"), ("| 2", "after round 1"), ("| 2", "after round 2"),
    ]  # fmt: skip
    assert all(row[1] == "8 (128)" for row in rows)  # 8 episodes of 16 steps: a window from every step
    error = {(row[0], row[2]): float(row[3]) for row in rows}
    assert error[("| 1", "after round 1")] < 0.5 * error[("| 1", "initial")], error
    assert error[("| 2", "after round 1")] < 0.8 * error[("| 2", "initial")], error  # unseen, the same world
