"""``scripts/prepare_outcome_start.sh`` (the rebuild of assets/metaworld_outcome) runs end to end, shrunk."""

import os
import subprocess

import pytest

from tests.assets import REPO

pytestmark = pytest.mark.slow


def test_rebuild_script_writes_a_policy_and_reports_its_stages(tmp_path):
    out = tmp_path / "start"
    env = dict(os.environ, EPISODES="2", DEMOS="1", SFT_STEPS="3", EVAL_EPISODES="1", NUM_ENVS="3")
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "prepare_outcome_start.sh"), str(out)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "sft" / "policy" / "model.safetensors").is_file()
    assert "prepare_outcome_start: done in" in done.stdout and "imitation policy" in done.stdout
    again = subprocess.run(["bash", str(REPO / "scripts" / "prepare_outcome_start.sh"), str(out)],
                           env=env, capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 2 and "exists; choose a new directory" in again.stderr
