"""``python -m toolkits.deploy.serve_policy`` checks its flags before it loads the policy: a bad value (a port
outside 0..65535 or already in use, a missing or incomplete policy directory, ``--max-batch 0``, ...) is one
``config error`` line naming the flag, the value and what is allowed (exit 2), never a traceback."""

import shutil
import socket
import subprocess
import sys

import pytest

from tests.assets import REPO
from tests.deploy.conftest import POLICY_DIR

EXPECTED = "expected config.json + model.safetensors from train_sft or export_policy"


def test_a_port_out_of_range_is_one_line_as_a_user_runs_it():
    cmd = [sys.executable, "-m", "toolkits.deploy.serve_policy", "--policy-dir", "assets/quickstart/policy",
           "--port", "99999"]  # fmt: skip
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "config error: --port=99999: a TCP port is 0..65535 (0: any free port, printed)"
    ]


@pytest.fixture()
def nothing_loads(monkeypatch):
    """``main`` of the server, with loading the policy a test failure."""
    import toolkits.deploy.serve_policy as serve_policy

    monkeypatch.setattr(serve_policy, "ServedPolicy", lambda *a, **k: pytest.fail("the policy was loaded"))
    return serve_policy.main


@pytest.fixture()
def bare_policy_dir(tmp_path):
    """The quickstart policy without its deploy.json (an imitation output)."""
    shutil.copytree(POLICY_DIR, tmp_path / "policy", ignore=shutil.ignore_patterns("deploy.json"))
    return str(tmp_path / "policy")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--port", "-1"], "--port=-1: a TCP port is 0..65535 (0: any free port, printed)"),
        (["--max-batch", "0"], "--max-batch=0: must be >= 1"),
        (["--record-max-steps", "0"], "--record-max-steps=0: must be >= 1"),
        (["--threads", "0"], "--threads=0: must be >= 1"),
        (["--max-message-mb", "0"], "--max-message-mb=0.0: must be > 0"),
        (["--device", "tpu"], "--device='tpu': allowed: cpu, cuda, cuda:N"),
        (["--device", "cuda:99"], "--device='cuda:99': "),
        (["--host", "nosuchhost.invalid", "--port", "8123"], "--host='nosuchhost.invalid': not an address of this machine"),
    ],
)  # fmt: skip
def test_bad_flags_are_one_line_before_the_policy_loads(nothing_loads, capsys, args, line):
    assert nothing_loads(["--policy-dir", str(POLICY_DIR), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"config error: {line}"), err


def test_a_missing_or_incomplete_policy_dir_is_one_line(nothing_loads, capsys, tmp_path, bare_policy_dir):
    assert nothing_loads(["--policy-dir", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err == (
        f"config error: --policy-dir={str(tmp_path / 'missing')!r}: no such policy directory ({EXPECTED})\n"
    )
    assert nothing_loads(["--policy-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"config error: --policy-dir={str(tmp_path)!r}: not a policy directory: no config.json and no "
        f"model.safetensors ({EXPECTED})\n"
    )
    assert nothing_loads(["--policy-dir", bare_policy_dir]) == 2  # no deploy.json and no --cameras
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(
        f"config error: --policy-dir={bare_policy_dir!r}: no deploy.json; pass --cameras with the camera names"
    ), err
    assert "python -m toolkits.deploy.spec --policy-dir DIR --env ENV" in err


def test_a_port_in_use_is_one_line(nothing_loads, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert nothing_loads(["--policy-dir", str(POLICY_DIR), "--port", str(port)]) == 2
    assert capsys.readouterr().err == (
        f"config error: --port={port}: already in use on 127.0.0.1 (another server listens there): choose "
        "another, or 0 for any free one\n"
    )


def test_a_port_taken_after_the_check_is_the_same_line(monkeypatch, capsys):
    """The port is checked before the model loads; one taken in between fails the bind itself, with the
    same line instead of a traceback."""
    import toolkits.deploy.serve_checks as serve_checks
    import toolkits.deploy.serve_policy as serve_policy

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(serve_checks, "check_bind", lambda host, port: None)
        assert serve_policy.main(["--policy-dir", str(POLICY_DIR), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"config error: --port={port}: already in use on 127.0.0.1 (another server listens there): choose "
        "another, or 0 for any free one"
    ), err
