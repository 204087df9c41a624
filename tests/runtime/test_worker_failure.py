"""A worker that fails stops the job with one line naming the worker and the cause; the traceback goes to
``<log_dir>/error.log`` and Ray is shut down."""

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from ray.exceptions import RayTaskError

from policy_and_value.runner.failure import describe_failure, record_failure

REPO = Path(__file__).resolve().parents[2]


def test_task_error_names_the_worker_method_and_the_cause():
    err = RayTaskError(
        "chunk_step", "Traceback ...\nValueError: boom", ValueError("boom\nsecond line"),
        proctitle="ray::env_0:EnvWorker.chunk_step", pid=12,
    )  # fmt: skip
    assert describe_failure(err) == "env_0:EnvWorker.chunk_step: ValueError: boom"
    assert describe_failure(KeyError("x")) == "driver: KeyError: 'x'"


def test_record_failure_writes_the_traceback(tmp_path):
    try:
        raise ValueError("disk on fire")
    except ValueError as err:
        failed = record_failure(err, str(tmp_path / "run"))
    log = (tmp_path / "run" / "error.log").read_text()
    assert "Traceback" in log and "disk on fire" in log
    assert (
        str(failed)
        == f"job failed in driver: ValueError: disk on fire (traceback: {tmp_path / 'run' / 'error.log'})"
    )


def _processes_under(path: str) -> list[str]:
    """Command lines naming ``path``: a job's Ray processes (raylet, GCS, workers) name its temp dir."""
    out = subprocess.run(["pgrep", "-af", path], capture_output=True, text=True).stdout
    return out.splitlines()


@pytest.mark.slow
def test_worker_failing_at_start_is_one_line_and_leaves_no_ray_behind(tmp_path):
    """The env worker cannot make its env (an id gymnasium does not know): a failure only the worker can see,
    after Ray started. The job is the small CartPole one: the same start-up path, with workers that import
    torch and gymnasium rather than pi0 and the world model (31 s against 51 s for rl_release_video's, quiet runs)."""
    # the job's own Ray temp dir (short: Ray's socket paths must fit in 107 characters), so that other
    # tests' Ray clusters running beside this one (pytest-xdist) are not mistaken for this job's
    with tempfile.TemporaryDirectory(prefix="rayfail", dir="/tmp") as ray_tmp:
        proc = subprocess.run(
            ["bash", str(REPO / "scripts" / "run_embodiment.sh"), "ppo_mlp_cartpole", "env.train.tasks=[NoSuchEnv-v0]",
             "runner.max_steps=1", f"runner.logger.log_path={tmp_path / 'logs'}"],
            capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1", "RAY_TMPDIR": ray_tmp},
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr[-2000:]
        errors = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower() and "WARNING" not in ln]
        assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert errors[0].startswith("error: job failed in env_0:EnvWorker.__init__ died while starting:"), (
            errors[0]
        )
        assert "NoSuchEnv" in errors[0]
        log = tmp_path / "logs" / "ppo_mlp_cartpole" / "error.log"
        assert f"(traceback: {log})" in errors[0]
        assert "gymnasium" in log.read_text()  # the worker's own traceback (the make that failed) is kept
        assert list(Path(ray_tmp).glob("ray/session_*")), "the job's Ray did not start under RAY_TMPDIR"
        assert _processes_under(ray_tmp) == []  # this job's Ray is gone
