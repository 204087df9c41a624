"""``serve-lerobot --record``: a LeRobot client's session becomes an episode of the project's format, each observation
with the action served for its timestep, ended by the robot's ``episode_end`` (with its outcome), a gap in the
timesteps, a new session or the server's stop; nothing is lost and a bad outcome key is refused in one line."""

from __future__ import annotations

import pickle

import grpc
import numpy as np
import pytest

from tests.deploy.test_serve_lerobot import (  # noqa: F401 (lerobot_classes: a fixture)
    POLICY,
    lerobot_classes,
    recorded_step,
    send,
    setup,
    stub_for,
)
from toolkits.deploy import lerobot_wire as wire
from toolkits.deploy.policy_source import FixedPolicy
from toolkits.deploy.serve_lerobot import AsyncInferenceServicer, recorder_for, start_server
from toolkits.deploy.served import ServedPolicy
from toolkits.episodes import EpisodeDataset


@pytest.fixture
def recording(tmp_path):
    """(a client stub, the servicer, the recording directory) of a server started with ``--record``."""
    source, root = FixedPolicy(ServedPolicy(POLICY, seed=0)), str(tmp_path / "rec")
    servicer = AsyncInferenceServicer(source, fps=10.0, obs_timeout=0.3, recorder=recorder_for(root, source))
    server, port = start_server(servicer, "127.0.0.1", 0)
    channel, stub = stub_for(port)
    yield stub, servicer, root
    channel.close()
    server.stop(grace=None)


def chunk_of(stub) -> dict[int, np.ndarray]:
    """The actions of the next answered chunk, by timestep."""
    return {a.timestep: a.action.numpy() for a in pickle.loads(stub.GetActions(wire.Empty()).data)}


def test_a_session_is_recorded_with_the_actions_served_for_its_timesteps(recording, lerobot_classes):  # noqa: F811
    stub, servicer, root = recording
    setup(stub, lerobot_classes, chunk=4)
    raws = [recorded_step(i)[0] for i in range(5)]
    send(stub, lerobot_classes, raws[0], timestep=0, must_go=True)
    served = chunk_of(stub)  # timesteps 0..3
    send(stub, lerobot_classes, raws[1], timestep=1)
    send(stub, lerobot_classes, raws[2], timestep=2, must_go=True)
    served |= chunk_of(stub)  # a newer chunk for 2..5: timesteps 2 and 3 take its actions
    send(stub, lerobot_classes, raws[3], timestep=3)
    end = raws[4] | {"episode_end": True, "success": True}
    send(stub, lerobot_classes, end, timestep=4)
    assert stub.GetActions(wire.Empty()).data == b""  # the final observation is not acted on
    servicer.close()
    data = EpisodeDataset(root)
    (ep,) = [data[i] for i in range(len(data))]
    assert ep.actions.shape == (4, 4) and ep.images.shape[0] == 5  # T actions, T + 1 observations
    np.testing.assert_array_equal(ep.actions, np.stack([served[t] for t in range(4)]))
    np.testing.assert_array_equal(ep.images[4], recorded_step(4)[1])  # the final observation
    assert ep.meta["outcome"] == "success" and ep.meta["success_once"] is True
    assert ep.meta["prompt"] == raws[0]["task"] and data.info["source"] == "worldrl serve-lerobot --record"


def test_a_gap_a_new_session_and_the_stop_each_end_an_episode_of_unknown_outcome(
    recording,
    lerobot_classes,  # noqa: F811
):
    stub, servicer, root = recording
    setup(stub, lerobot_classes, chunk=4)
    raw = recorded_step(0)[0]
    send(stub, lerobot_classes, raw, timestep=0, must_go=True)
    chunk_of(stub)
    send(stub, lerobot_classes, raw, timestep=1)
    send(stub, lerobot_classes, raw, timestep=2)
    send(stub, lerobot_classes, raw, timestep=5, must_go=True)  # skipped 3 and 4: the episode ends at 2
    chunk_of(stub)
    send(stub, lerobot_classes, raw, timestep=6)
    setup(stub, lerobot_classes, chunk=4)  # Ready: the open episode (5 -> 6) is saved
    send(stub, lerobot_classes, raw, timestep=0, must_go=True)
    chunk_of(stub)
    send(stub, lerobot_classes, raw, timestep=1)
    send(stub, lerobot_classes, raw, timestep=2)
    servicer.close()  # the server stops: the session's episode (0 -> 2) is saved
    data = EpisodeDataset(root)
    assert [(e["length"], e["outcome"]) for e in data.entries] == [
        (2, "unknown"),
        (1, "unknown"),
        (2, "unknown"),
    ]


def test_a_bad_outcome_key_is_refused_in_one_line(recording, lerobot_classes):  # noqa: F811
    stub, _, _ = recording
    setup(stub, lerobot_classes)
    raw = recorded_step(0)[0] | {"episode_end": True, "success": "yes"}
    with pytest.raises(grpc.RpcError) as err:
        send(stub, lerobot_classes, raw, timestep=0)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == "observation success='yes': true, false or absent (unknown)"


def test_record_flags_are_checked_before_serving(capsys, tmp_path):
    from toolkits.deploy.serve_lerobot import main

    for argv, expected in (
        (["--record-max-steps", "0"], "--record-max-steps=0: must be >= 1"),
        (["--record-idle", "0"], "--record-idle=0.0: must be > 0"),
    ):
        with pytest.raises(SystemExit) as done:
            main(["--policy-dir", str(POLICY), "--record", str(tmp_path / "r"), *argv])
        assert done.value.code == 2 and expected in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_pause_saves_the_open_episode_and_the_session_records_on(recording, lerobot_classes):  # noqa: F811
    """``--record-idle``: a robot silent between episodes has its episode saved, and its next observations (same
    session, no new setup) begin the next one."""
    stub, servicer, root = recording
    setup(stub, lerobot_classes, chunk=4)
    raw = recorded_step(0)[0]
    for _ in range(2):
        send(stub, lerobot_classes, raw, timestep=0, must_go=True)
        chunk_of(stub)
        send(stub, lerobot_classes, raw, timestep=1)
        send(stub, lerobot_classes, raw, timestep=2)
        servicer.end_idle(0.0)  # silent for longer than the limit
        servicer.end_idle(0.0)  # nothing open: nothing more saved
    servicer.close()
    assert [(e["length"], e["outcome"], e["connection"]) for e in EpisodeDataset(root).entries] == [
        (2, "unknown", 1),
        (2, "unknown", 1),
    ]
