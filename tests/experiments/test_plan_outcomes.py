"""``experiments.harness.plan_outcomes``: the imagined worth of recorded plans against their outcome in the simulator,
over all plans, per task and within starts."""

import json

import pytest

from experiments.harness.plan_outcomes import main as plan_outcomes


def _plans(tmp_path, rows: list[tuple[str, int, float, bool, bool]]) -> str:
    """An index of plans: (task, start, imagined return, imagined success, success replayed)."""
    entries = [
        {"task": t, "reset_state_id": s, "imagined_return": r, "imagined_success": i, "success_once": y}
        for t, s, r, i, y in rows
    ]
    entries.append({"task": "a", "reset_state_id": 0, "success_once": True})  # not a plan: no imagined return
    (tmp_path / "index.json").write_text(json.dumps({"info": {}, "episodes": entries}))
    return str(tmp_path)


def test_the_table_ranks_plans_by_their_imagined_return(tmp_path, capsys):
    rows = [
        ("a", 0, 2.0, True, True), ("a", 0, 1.0, False, False),   # start 0: ranked right
        ("a", 1, 0.5, True, False), ("a", 1, 1.5, False, True),   # start 1: right by the return, wrong by success
        ("b", 0, 0.2, False, False), ("b", 0, 0.1, False, False),  # b: never succeeds
    ]  # fmt: skip
    assert plan_outcomes(["--episodes", _plans(tmp_path, rows)]) == 0
    lines = {
        line.split(" | ")[0]: line.strip("| ").split(" | ") for line in capsys.readouterr().out.splitlines()
    }
    assert lines["| all"][1:] == ["6", "33.3%", "33.3%", "1.000", "0.625", "1.000 (2)"]
    assert lines["| a"][1:] == ["4", "50.0%", "50.0%", "1.000", "0.500", "1.000 (2)"]
    assert lines["| b"][1:] == ["2", "0.0%", "0.0%", "n/a", "n/a", "nan (0)"]


def test_episodes_without_plans_are_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "index.json").write_text(
        json.dumps({"info": {}, "episodes": [{"task": "a", "success_once": True}]})
    )
    with pytest.raises(SystemExit):
        plan_outcomes(["--episodes", str(tmp_path)])
    assert "--episodes=" in capsys.readouterr().err
