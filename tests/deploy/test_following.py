"""A server following a policy registry (``--registry``): it serves the current version, swaps when the pointer
moves without dropping a connection or switching inside an episode, names the acting version in the metadata, every
answer and every recorded episode, refuses a version with another interface, and follows a rollback."""

from __future__ import annotations

import numpy as np
import pytest

from tests.assets import REPO
from tests.deploy.conftest import NO_OPENPI_CLIENT, observation
from tests.deploy.test_record import end, wait_for_episodes
from toolkits.deploy.registry import PolicyRegistry

pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
from openpi_client.websocket_client_policy import WebsocketClientPolicy  # noqa: E402

V1 = REPO / "assets" / "metaworld_outcome" / "policy"
V2 = REPO / "assets" / "metaworld_outcome20" / "policy"  # the same interface, other weights
OTHER = REPO / "assets" / "metaworld_obs" / "policy"  # 4 numbers of proprioception: another interface


def load(policy_dir):
    from toolkits.deploy.served import ServedPolicy

    return ServedPolicy(policy_dir, seed=0)


def test_episodes_end_on_the_version_they_began_on_and_new_ones_take_the_current(tmp_path):
    from toolkits.deploy.policy_source import RegistryFollower
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread

    reg = PolicyRegistry.create(tmp_path / "reg")
    reg.publish_directory(V1)
    follower = RegistryFollower(reg, load, interval=3600)  # the test moves it with check()
    obs = observation(0)
    expected = {v: load(d).infer(obs)["actions"] for v, d in ((1, V1), (2, V2))}
    assert not np.allclose(expected[1], expected[2])
    server = PolicyServer(follower, port=0, record=str(tmp_path / "rec"))
    with ServerThread(server) as thread:
        a = WebsocketClientPolicy("127.0.0.1", thread.server.port)
        assert a.get_server_metadata()["policy_version"] == 1
        first = a.infer(obs)
        assert first["policy_version"] == 1 and np.allclose(first["actions"], expected[1], atol=1e-5)
        reg.publish_directory(V2)
        assert follower.check() and not follower.check()
        b = WebsocketClientPolicy("127.0.0.1", thread.server.port)  # a new client: the new version
        assert b.get_server_metadata()["policy_version"] == 2
        assert np.allclose(b.infer(obs)["actions"], expected[2], atol=1e-5)
        assert a.infer(obs)["policy_version"] == 1  # a's episode began on version 1: it ends there
        assert follower.status()["held"] == {1: 1, 2: 1}
        assert a.infer(end(True, observation(1)))["policy_version"] == 1
        after = a.infer(obs)  # a's next episode, on the same connection: version 2
        assert after["policy_version"] == 2 and np.allclose(after["actions"], expected[2], atol=1e-5)
        assert 1 not in follower.loaded  # no episode holds version 1 and it is not current: dropped
        # a version with another interface is refused; the server goes on
        reg.publish_directory(OTHER)
        assert not follower.check() and "state_dim 39 -> 4" in follower.refused[3]
        assert b.infer(obs)["policy_version"] == 2
        # rollback: the episodes that begin now run on version 1 again
        reg.rollback(to=1)
        assert follower.check()
        b.infer(end(False, observation(1)))
        assert b.infer(obs)["policy_version"] == 1
        a.infer(end(None, observation(1)))
        b.infer(end(None, observation(1)))
        ds = wait_for_episodes(str(tmp_path / "rec"), 4)
    versions = sorted((e["connection"], e["policy_version"], e["outcome"]) for e in ds.entries)
    assert versions == [(1, 1, "success"), (1, 2, "unknown"), (2, 1, "unknown"), (2, 2, "failure")]
    assert {e["policy"] for e in ds.entries} == {f"served {reg.path(1)}", f"served {reg.path(2)}"}


def test_the_cli_serves_a_registry_and_refuses_an_empty_one(tmp_path, capsys):
    from toolkits.deploy.serve_policy import main

    root = tmp_path / "reg"
    assert main(["--registry", str(root), "--port", "0"]) == 2
    assert "--registry=" in capsys.readouterr().err
    PolicyRegistry.create(root)
    assert main(["--registry", str(root), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nothing published yet" in err
    PolicyRegistry(root).publish_directory(V1)
    assert main(["--registry", str(root), "--port", "0", "--follow-interval", "0"]) == 2
    assert "--follow-interval=0.0: must be > 0 seconds" in capsys.readouterr().err
