"""kill -9 of the improver at several points of a round: restarted, it finishes the round it was in (the same
episodes, none lost or counted twice), publishes it once, and the registry stays consistent."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.assets import REPO
from toolkits.deploy.registry import PolicyRegistry

pytestmark = pytest.mark.slow
POLICY = REPO / "assets" / "quickstart" / "policy"
EPISODES = REPO / "assets" / "quickstart" / "offline_episodes"  # 12 episodes, 9 successful


def improver(tmp_path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "toolkits.online.improver", f"registry={tmp_path}/reg",
            f"recordings={tmp_path}/rec", f"work_dir={tmp_path}/w", "once=true", "min_new_episodes=10",
            "holdout_every=4", "gate.max_heldout_loss_ratio=100",
            'sft_overrides=["train.max_steps=30","train.batch_size=4","train.warmup_steps=1","train.save_interval=30"]']  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def kill_at(tmp_path, point: str) -> None:
    """Start the improver and kill -9 it the moment ``point`` appears under its work dir."""
    proc = improver(tmp_path)
    deadline = time.time() + 300
    while not (tmp_path / "w" / point).exists():
        assert proc.poll() is None, proc.stdout.read()  # it must still be in the round when the point appears
        assert time.time() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_an_improver_killed_midway_finishes_its_round_once_on_restart(tmp_path):
    """Killed once while it splits the episodes and again, restarted, while it fine-tunes: each time the round
    stays open and nothing is published; a third start finishes it once, with the same 12 episodes."""
    reg = PolicyRegistry.create(tmp_path / "reg")
    reg.publish_directory(POLICY)
    shutil.copytree(EPISODES, tmp_path / "rec")
    for point in ("round_001/train/index.json", "round_001/sft"):
        kill_at(tmp_path, point)
        state = json.loads((tmp_path / "w" / "state.json").read_text())
        assert state["running"] == {"number": 1, "new": 12} and state["rounds"] == [], point
        assert reg.versions() == [1], point
    again = improver(tmp_path)
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out[-3000:]
    state = json.loads((tmp_path / "w" / "state.json").read_text())
    assert "running" not in state and [r["round"] for r in state["rounds"]] == [1]
    assert state["rounds"][0]["published"] == 2 and reg.versions() == [1, 2] and reg.current() == 2
    assert len(state["train"]) == 9 and len(state["heldout"]) == 3  # the same 12 episodes, each once
    assert not set(state["train"]) & set(state["heldout"])
    assert reg.verify(2) == [] and reg.manifest(2).source["improver_round"] == 1
