"""The wandb and swanlab metric backends in their offline modes: each run lands under the job's log
directory with the logged values, and nothing is sent over the network."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from toolkits.base.metric_logger import MetricLogger


@pytest.fixture
def quiet_home(tmp_path, monkeypatch):
    """Keep the services' settings and caches out of the user's home; no prompts, no network."""
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "SWANLAB_ROOT"):
        monkeypatch.setenv(var, str(tmp_path / "home" / var.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("SWANLAB_MODE", raising=False)
    return tmp_path


def _log_two_steps(log_dir: Path, backend: str) -> None:
    logger = MetricLogger(str(log_dir), [backend], "worldrl-test", "offline", {"lr": 1e-4}, mode="offline")
    logger.log({"train/loss": 1.5}, step=0)
    logger.log({"train/loss": 2.25}, step=1)
    logger.close()


def _bytes_once_flushed(path: Path, needle: bytes, wait_s: float = 60.0) -> bytes:
    """The file's bytes once ``needle`` is in them: wandb's own service process writes the run file and,
    on a loaded machine, may still be flushing it when ``finish()`` returns (seen once in CI)."""
    deadline = time.monotonic() + wait_s
    data = path.read_bytes()
    while needle not in data and time.monotonic() < deadline:
        time.sleep(0.5)
        data = path.read_bytes()
    return data


def test_wandb_offline_run_holds_the_logged_values(quiet_home):
    _log_two_steps(quiet_home / "run", "wandb")
    runs = list((quiet_home / "run" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1, runs
    data = _bytes_once_flushed(runs[0], b"2.25")
    assert b"train/loss" in data and b"2.25" in data  # wandb keeps values as JSON text


def test_swanlab_offline_run_holds_the_logged_values(quiet_home):
    _log_two_steps(quiet_home / "run", "swanlab")
    runs = list((quiet_home / "run" / "swanlog").glob("run-*/run-*.swanlab"))
    assert len(runs) == 1, runs
    data = runs[0].read_bytes()
    assert b"train/loss" in data and struct.pack("<d", 2.25) in data  # swanlab keeps float64 scalars
