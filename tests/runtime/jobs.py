"""Run a job config end to end the way users do (``run_job``) and read back its metrics."""

import json
from pathlib import Path

import ray

from policy_and_value.config import load_config
from policy_and_value.runner import run_job


def run_and_read(config: str, log_path: Path, name: str, overrides: list[str]) -> list[dict]:
    """Run ``config`` with ``overrides`` into ``log_path/name``; returns the rows of metrics.jsonl."""
    cfg = load_config(
        config, [*overrides, f"runner.logger.log_path={log_path}", f"runner.logger.experiment_name={name}"]
    )
    run_job(cfg)
    assert not ray.is_initialized(), "run_job must shut Ray down"
    return [json.loads(x) for x in (log_path / name / "metrics.jsonl").read_text().splitlines()]
