"""Run a job config end to end the way users do (``run_job``) and read back its metrics.

The jobs of one test process share one local Ray, started the way ``Cluster.start`` starts one
(``init_ray``): a job that finds Ray running uses it and leaves it running, as it does for a user who
started Ray first. That saves every job Ray's start and stop (about 5 s each on 2 cores); what a job
must still undo, its placement groups and its named workers, is checked after each one. Tests of a job
that starts and stops its own Ray use ``own_ray=True`` (the CLI tests start theirs in a new process).
"""

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import ray
import ray.util

from policy_and_value.config import load_config
from policy_and_value.runner import run_job
from policy_and_value.runtime.cluster import init_ray


def shared_ray() -> None:
    """Start this test process's shared Ray unless it runs already."""
    if not ray.is_initialized():
        init_ray()


def stop_shared_ray() -> None:
    """Stop the shared Ray (tests that need this process without one)."""
    if ray.is_initialized():
        ray.shutdown()


def assert_job_left_nothing(timeout_s: float = 30.0) -> None:
    """The job removed its placement groups and killed its workers: every CPU is free again and no named
    actor (the workers are ``env_0``, ``rollout_0``, ...) is alive."""
    deadline = time.monotonic() + timeout_s
    while True:
        free = ray.available_resources().get("CPU", 0.0)
        total = ray.cluster_resources().get("CPU", 0.0)
        named = ray.util.list_named_actors()
        if free == total and not named:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"after the job: {free} of {total} CPUs free, named actors alive: {named}")
        time.sleep(0.2)


@contextmanager
def shared_ray_job() -> Iterator[None]:
    """Run the job(s) of the ``with`` block in the shared Ray, then check that they left it running and
    left nothing in it; a failure stops the shared Ray, so what a failed job left cannot reach the next."""
    shared_ray()
    try:
        yield
        assert ray.is_initialized(), "run_job must leave a Ray it did not start running"
        assert_job_left_nothing()
    except BaseException:
        stop_shared_ray()
        raise


def run_and_read(
    config: str, log_path: Path, name: str, overrides: list[str], own_ray: bool = False
) -> list[dict]:
    """Run ``config`` with ``overrides`` into ``log_path/name``; returns the rows of metrics.jsonl.

    ``own_ray``: the job starts its own Ray and must shut it down; else it joins the shared one.
    """
    cfg = load_config(
        config, [*overrides, f"runner.logger.log_path={log_path}", f"runner.logger.experiment_name={name}"]
    )
    if own_ray:
        stop_shared_ray()
        run_job(cfg)
        assert not ray.is_initialized(), "run_job must shut down the Ray it started"
    else:
        with shared_ray_job():
            run_job(cfg)
    return [json.loads(x) for x in (log_path / name / "metrics.jsonl").read_text().splitlines()]
