"""Nothing lost: a recording server killed with SIGKILL at several moments while clients record loses no episode
it acknowledged, and the restarted server adds the ones written but not yet indexed; a file it cannot read is moved
to quarantine/ and recording goes on."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.deploy.conftest import NO_OPENPI_CLIENT, POLICY_DIR, observation
from tests.deploy.test_record import end, step

pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
from openpi_client.websocket_client_policy import WebsocketClientPolicy  # noqa: E402

from toolkits.episodes import EpisodeDataset  # noqa: E402

pytestmark = pytest.mark.slow
CLIENTS = 4


def start_server(record: Path) -> tuple[subprocess.Popen, int]:
    """``serve_policy --record`` in a process of its own; returns it and the port it bound."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkits.deploy.serve_policy", "--policy-dir", str(POLICY_DIR), "--port", "0",
         "--record", str(record), "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        match = re.search(r"on ws://127\.0\.0\.1:(\d+)", line)
        if match:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep draining its output
            return proc, int(match.group(1))
    raise AssertionError(f"the server did not start (exit {proc.wait()})")


def record_until_killed(port: int, acknowledged: list[str], client: int) -> None:
    """Record short episodes until the server goes away; every acknowledged file is kept in ``acknowledged``."""
    try:
        policy = WebsocketClientPolicy("127.0.0.1", port)
        for episode in range(1000):
            seed = 1000 * client + episode
            policy.infer(observation(seed))
            for k in range(3):
                policy.infer(step(seed + k + 1))
            answer = policy.infer(end(episode % 2 == 0, observation(seed + 9)))
            acknowledged.append(answer["file"])
    except Exception:  # noqa: BLE001 - the kill ends the connection, however it surfaces
        return


def test_a_server_killed_at_any_moment_loses_no_acknowledged_episode(tmp_path):
    record = tmp_path / "rec"
    acknowledged: list[str] = []
    for delay in (0.5, 1.3, 2.1):  # seconds into recording: different moments of the writer's work
        proc, port = start_server(record)
        clients = [
            threading.Thread(target=record_until_killed, args=(port, acknowledged, c)) for c in range(CLIENTS)
        ]
        for thread in clients:
            thread.start()
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        for thread in clients:
            thread.join(60)
    proc, _ = start_server(record)  # the restart adds what was written but not indexed
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 0
    ds = EpisodeDataset(str(record))
    files = [e["file"] for e in ds.entries]
    assert len(acknowledged) >= 10 and set(acknowledged) <= set(files), (len(acknowledged), len(files))
    assert len(set(files)) == len(files) and not list(record.rglob("*.tmp"))
    for i in range(len(ds)):
        assert ds[i].length == 4  # every listed episode is whole: 4 actions, 5 observations


def test_a_file_written_but_not_indexed_is_added_and_an_unreadable_one_quarantined(tmp_path, served):
    import numpy as np

    from toolkits.deploy.record import EpisodeRecorder
    from toolkits.episodes import Episode, EpisodeWriter

    record = tmp_path / "rec"
    EpisodeRecorder(str(record), served).close()
    ep = Episode(np.zeros((5, 2, 64, 64, 3), np.uint8), np.zeros((5, 39), np.float32), np.zeros((4, 4), np.float32),
                 np.zeros(4, np.float32), np.zeros(4, bool), {"task": "reach-v3", "outcome": "failure"})  # fmt: skip
    EpisodeWriter(str(record), append=True).write(ep)  # killed before the index was rewritten
    (record / "episodes" / "episode_000001.h5").write_bytes(b"not hdf5")  # e.g. copied in half
    (record / "episodes" / "episode_000002.h5.tmp").write_bytes(b"half")
    recorder = EpisodeRecorder(str(record), served)
    recorder.close()
    assert (record / "quarantine" / "episode_000001.h5").is_file() and not list(record.rglob("*.tmp"))
    ds = EpisodeDataset(str(record))
    assert [e["file"] for e in ds.entries] == ["episodes/episode_000000.h5"] and ds[0].length == 4
