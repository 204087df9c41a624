"""``worldrl recipe outcome-start`` (the rebuild of assets/metaworld_outcome) runs end to end in Python, shrunk."""

import json

import pytest

from tests.assets import REPO
from toolkits.recipes import outcome_start

pytestmark = pytest.mark.slow


def test_the_recipe_writes_a_complete_policy_and_reports_its_stages(tmp_path, capsys):
    """With --redraw-config the imitation reads the demonstrations and the same redrawn by the job's renderer."""
    out = tmp_path / "start"
    argv = ["--out", str(out), "--episodes", "1", "--demos", "1", "--sft-steps", "3", "--eval-episodes", "1",
            "--num-envs", "3", "--redraw-config", "rl_metaworld_dense_wm_critic_20demo", "--state-noise", "0.05"]  # fmt: skip
    assert outcome_start.main(argv) == 0
    printed = capsys.readouterr().out
    assert (out / "sft" / "policy" / "model.safetensors").is_file()
    shipped = REPO / "assets" / "metaworld_outcome" / "policy" / "deploy.json"  # a complete policy directory
    assert (out / "sft" / "policy" / "deploy.json").read_bytes() == shipped.read_bytes()
    assert "outcome-start: done in" in printed and "imitation policy" in printed
    demos, both = (
        json.loads((out / d / "index.json").read_text())["episodes"] for d in ("demos", "demos_both")
    )
    assert len(both) == 2 * len(demos) > 0
    assert f"algorithm.offline_data_path={out}/demos_both" in printed
    assert outcome_start.main(argv) == 2  # never over an earlier build
    assert "exists; choose a new directory" in capsys.readouterr().err


def test_demos_only_stops_after_the_demonstrations(tmp_path, capsys):
    out = tmp_path / "demos_only"
    argv = ["--out", str(out), "--episodes", "1", "--demos", "1", "--num-envs", "3", "--demos-only"]
    assert outcome_start.main(argv) == 0
    printed = capsys.readouterr().out
    assert (out / "demos" / "index.json").is_file() and not (out / "sft").exists()
    assert "imitation policy" not in printed and f"demonstrations: {out}/demos" in printed


def test_an_unknown_redraw_job_is_one_line_before_any_work(tmp_path, capsys):
    argv = ["--out", str(tmp_path / "x"), "--redraw-config", "rl_metaworld_nope"]
    assert outcome_start.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--redraw-config='rl_metaworld_nope': no such config" in err
    assert not (tmp_path / "x").exists()
