"""A real two-node Ray cluster on this machine, started the way users start one: the head with
``run_embodiment_ray_unified_multi_task.sh --head`` (which runs the job once both nodes are up) and a
second node with ``--address`` and its own resources. Every component is packed onto both devices (one
per node): env and rollout ranks 0-1, actor ranks 0-3 (DDP over gloo) two per device; ``placement.json``
says where every rank ran."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "run_embodiment_ray_unified_multi_task.sh"
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    """The script in its own process group, so the test can stop it and every process it started."""
    return subprocess.Popen(
        ["bash", str(SCRIPT), *args], stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def test_actor_ranks_span_a_head_and_a_second_node(tmp_path):
    import ray.util

    port, ip = _free_port(), ray.util.get_node_ip_address()
    job = [
        "ppo_mlp_cartpole", "cluster=partial_sharing", "cluster.num_nodes=2", "cluster.num_devices_per_node=1",
        "cluster.component_placement.env=0-1", "cluster.component_placement.rollout=0-1",
        "cluster.component_placement.actor='0-1:0-3'", "actor.micro_batch_size=32", "runner.max_steps=2",
        "runner.val_check_interval=-1",
        "runner.save_interval=-1", "runner.progress_bar=false", f"runner.logger.log_path={tmp_path}",
        "cluster.node_timeout_s=120",
    ]  # fmt: skip
    head = _start(["--head", "--port", str(port), "--num-cpus", "2", *job], tmp_path / "head.log")
    node = None
    try:
        # a guard against a head that hangs, not a speed target: a loaded 2-core machine took over 60 s
        deadline = time.monotonic() + 240
        while "Ray head at" not in (tmp_path / "head.log").read_text(errors="replace"):
            assert head.poll() is None and time.monotonic() < deadline, (tmp_path / "head.log").read_text()
            time.sleep(1)
        node = _start(["--address", f"{ip}:{port}", "--num-cpus", "2"], tmp_path / "node.log")
        assert head.wait(timeout=240) == 0, (tmp_path / "head.log").read_text()[-3000:]
    finally:
        _stop(head)
        if node is not None:
            _stop(node)
    placement = json.loads((tmp_path / "ppo_mlp_cartpole" / "placement.json").read_text())
    assert len(set(placement["nodes"])) == 2
    actors = placement["actor"]
    assert [(a["rank"], a["device"], a["node"]) for a in actors] == [(0, 0, 0), (1, 0, 0), (2, 1, 1), (3, 1, 1)]  # fmt: skip
    for ranks in (placement["env"], placement["rollout"], actors):  # each rank on the machine its slot names
        assert [r["node_id"] for r in ranks] == [placement["nodes"][r["node"]] for r in ranks]
    assert [e["node"] for e in placement["env"]] == [0, 1]
    assert "worldrl run finished: 2 steps" in (tmp_path / "head.log").read_text()
    metrics = (tmp_path / "ppo_mlp_cartpole" / "metrics.jsonl").read_text()
    rows = [json.loads(line) for line in metrics.splitlines()]
    assert rows[0]["train/actor/ratio"] == pytest.approx(1.0, abs=0.2)  # the four ranks train


def test_the_head_stops_with_one_line_when_the_nodes_do_not_join(tmp_path):
    run = subprocess.run(
        ["bash", str(SCRIPT), "--head", "--port", str(_free_port()), "--num-cpus", "2", "ppo_mlp_cartpole",
         "cluster.num_nodes=2", "cluster=partial_sharing", "cluster.num_devices_per_node=1",
         "actor.micro_batch_size=128", "cluster.node_timeout_s=3", f"runner.logger.log_path={tmp_path}"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "only 1 Ray node(s) joined within 3 s" in errors[0], run.stderr[-2000:]
