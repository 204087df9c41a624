"""The robot stand-in: Meta-World episodes through openpi's real ``WebsocketClientPolicy`` and
``ActionChunkBroker`` against the server succeed exactly where in-process evaluation of the same policy
directory succeeds (same layouts, the server's per-request noise)."""

import pytest

from tests.assets import QUICKSTART_TASKS
from tests.deploy.conftest import POLICY_DIR


@pytest.mark.slow
def test_served_success_matches_in_process_evaluation(server):
    from toolkits.deploy.robot_client import run_in_process_episodes, run_served_episodes

    tasks = list(QUICKSTART_TASKS)
    served, meta = run_served_episodes("127.0.0.1", server.server.port, tasks, episodes_per_task=1)
    assert meta["noise_seed"] == 0 and [len(served[t]) for t in tasks] == [1, 1, 1]
    local = run_in_process_episodes(str(POLICY_DIR), meta, tasks, episodes_per_task=1)
    assert {t: sum(s) / len(s) for t, s in served.items()} == local
    assert any(any(s) for s in served.values())  # not a trivial match of all failures


def test_robot_client_cli_prints_the_comparison(server, capsys):
    from toolkits.deploy.robot_client import main

    port = str(server.server.port)
    code = main(["--port", port, "--tasks", "button-press-topdown-v3", "--episodes", "1", "--max-episode-steps", "20",
                 "--compare-policy-dir", str(POLICY_DIR)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "| button-press-topdown-v3 | 1 |" in out and "served and in-process success match" in out
    assert main(["--port", port, "--tasks", "no-such-task", "--episodes", "1"]) == 2
