"""scripts/run_embodiment_ray_unified_multi_task.sh: CONFIG is optional (ppo_pi0_mt10), overrides follow,
and the job is validated before Ray starts (a bad task_weights ends it with one line and exit code 2)."""

import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "run_embodiment_ray_unified_multi_task.sh"


@pytest.mark.parametrize("config", [[], ["ppo_pi0_mt10"]])
def test_the_default_config_is_mt10_and_bad_weights_stop_it_before_ray(config, tmp_path):
    run = subprocess.run(
        ["bash", str(SCRIPT), *config, "env.train.task_weights=[1,1]", f"runner.logger.log_path={tmp_path}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "env.train.task_weights" in lines[0] and "10 tasks" in lines[0], lines
    assert not any(tmp_path.iterdir())  # no log directory left behind
