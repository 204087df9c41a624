"""``scripts/prepare_outcome_start.sh`` (the rebuild of assets/metaworld_outcome) runs end to end, shrunk."""

import json
import os
import subprocess

import pytest

from tests.assets import REPO

pytestmark = pytest.mark.slow


def test_rebuild_script_writes_a_policy_and_reports_its_stages(tmp_path):
    """With REDRAW_CONFIG the imitation reads the demonstrations and the same redrawn by the job's renderer."""
    out = tmp_path / "start"
    env = dict(os.environ, EPISODES="2", DEMOS="1", SFT_STEPS="3", EVAL_EPISODES="1", NUM_ENVS="3",
               REDRAW_CONFIG="rl_metaworld_dense_wm_critic_20demo", STATE_NOISE="0.05")  # fmt: skip
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "prepare_outcome_start.sh"), str(out)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "sft" / "policy" / "model.safetensors").is_file()
    shipped = REPO / "assets" / "metaworld_outcome" / "policy" / "deploy.json"  # a complete policy directory
    assert (out / "sft" / "policy" / "deploy.json").read_bytes() == shipped.read_bytes()
    assert "prepare_outcome_start: done in" in done.stdout and "imitation policy" in done.stdout
    demos, both = (
        json.loads((out / d / "index.json").read_text())["episodes"] for d in ("demos", "demos_both")
    )
    assert len(both) == 2 * len(demos) > 0
    assert f"algorithm.offline_data_path={out}/demos_both" in done.stdout
    again = subprocess.run(["bash", str(REPO / "scripts" / "prepare_outcome_start.sh"), str(out)],
                           env=env, capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 2 and "exists; choose a new directory" in again.stderr


def test_demos_only_stops_after_the_demonstrations(tmp_path):
    out = tmp_path / "demos_only"
    env = dict(os.environ, EPISODES="1", DEMOS="1", NUM_ENVS="3", DEMOS_ONLY="1")
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "prepare_outcome_start.sh"), str(out)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "demos" / "index.json").is_file() and not (out / "sft").exists()
    assert "imitation policy" not in done.stdout and f"demonstrations: {out}/demos" in done.stdout
