"""LeRobot's async-inference protocol: a client written against LeRobot's published services.proto and its pickled
dataclasses (stand-ins registered under lerobot's module path, pickled with the standard pickle as LeRobot's client
does) gets the same action chunk the openpi server gives for the same observation, timed as LeRobot's server times
it; mismatched features, foreign pickles and repeated states are handled as documented."""

from __future__ import annotations

import pickle
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np
import pytest

from tests.assets import REPO
from toolkits.deploy import lerobot_wire as wire
from toolkits.deploy.policy_source import FixedPolicy
from toolkits.deploy.serve_lerobot import AsyncInferenceServicer, start_server
from toolkits.deploy.served import ServedPolicy

POLICY = (
    REPO / "assets" / "metaworld_obs" / "policy"
)  # cameras corner, gripperPOV; 4 numbers of proprioception
STARTS = REPO / "assets" / "world_models" / "observation" / "starts"
JOINTS = ["x.pos", "y.pos", "z.pos", "gripper.pos"]


@pytest.fixture
def lerobot_classes(monkeypatch):
    """LeRobot's dataclasses (async_inference/helpers.py fields) in a module of LeRobot's name, as its client has."""
    helpers = types.ModuleType("lerobot.async_inference.helpers")

    @dataclass
    class TimedObservation:
        timestamp: float
        timestep: int
        observation: dict
        must_go: bool = False

    @dataclass
    class TimedAction:
        timestamp: float
        timestep: int
        action: Any

    @dataclass
    class RemotePolicyConfig:
        policy_type: str
        pretrained_name_or_path: str
        lerobot_features: dict
        actions_per_chunk: int
        device: str = "cpu"
        rename_map: dict = field(default_factory=dict)

    for cls in (TimedObservation, TimedAction, RemotePolicyConfig):
        cls.__module__, cls.__qualname__ = helpers.__name__, cls.__name__
        setattr(helpers, cls.__name__, cls)
    for name in ("lerobot", "lerobot.async_inference"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, helpers.__name__, helpers)
    return helpers


@pytest.fixture(scope="module")
def served():
    return ServedPolicy(POLICY, seed=0)


@pytest.fixture
def client(served):
    servicer = AsyncInferenceServicer(FixedPolicy(served), fps=10.0, obs_timeout=0.3)
    server, port = start_server(servicer, "127.0.0.1", 0)
    channel, stub = stub_for(port)
    yield stub
    channel.close()
    server.stop(grace=None)


def stub_for(port: int) -> tuple[grpc.Channel, types.SimpleNamespace]:
    """(a channel, a client stub of the four ``transport.AsyncInference`` methods) for a server on ``port``."""
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    path, ser = f"/{wire.PACKAGE}.{wire.SERVICE}/", lambda m: m.SerializeToString()
    stub = types.SimpleNamespace(
        Ready=channel.unary_unary(path + "Ready", ser, wire.Empty.FromString),
        SendPolicyInstructions=channel.unary_unary(
            path + "SendPolicyInstructions", ser, wire.Empty.FromString
        ),
        SendObservations=channel.stream_unary(path + "SendObservations", ser, wire.Empty.FromString),
        GetActions=channel.unary_unary(path + "GetActions", ser, wire.Actions.FromString),
    )
    return channel, stub


def features(state_names=JOINTS, cameras=("corner", "gripperPOV")) -> dict[str, Any]:
    """``hw_to_dataset_features``' form of a robot with these joints and cameras."""
    out = {
        "observation.state": {"dtype": "float32", "shape": (len(state_names),), "names": list(state_names)}
    }
    for cam in cameras:
        out[f"observation.images.{cam}"] = {"dtype": "image", "shape": (64, 64, 3), "names": ["h", "w", "c"]}
    return out


def recorded_step(i: int = 0) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """(a raw LeRobot observation, the images [V, S, S, 3], the state) of a recorded Meta-World start frame."""
    from toolkits.episodes import EpisodeDataset

    ds = EpisodeDataset(str(STARTS))
    images, state = ds.read(i, "images")[0], ds.read(i, "state")[0][:4].astype(np.float32)
    raw = {name: float(v) for name, v in zip(JOINTS, state, strict=True)}
    raw |= {"corner": images[0], "gripperPOV": images[1], "task": ds.entries[i]["prompt"]}
    return raw, images, state


def send(stub, helpers, raw, timestep, must_go=False) -> None:
    payload = pickle.dumps(
        helpers.TimedObservation(100.0, timestep, raw, must_go)
    )  # LeRobot's client: pickle
    stub.SendObservations(iter(wire.chunked(payload)))


def setup(stub, helpers, chunk=4, **kw) -> None:
    stub.Ready(wire.Empty())
    config = helpers.RemotePolicyConfig("pi0", "any/name", kw.pop("feats", features()), chunk, **kw)
    stub.SendPolicyInstructions(wire.PolicySetup(data=pickle.dumps(config)))


def test_a_lerobot_client_gets_the_chunk_the_openpi_server_gives(client, lerobot_classes, served):
    setup(client, lerobot_classes, chunk=3)
    raw, images, state = recorded_step()
    send(client, lerobot_classes, raw, timestep=7)
    reply = client.GetActions(wire.Empty())
    actions = pickle.loads(reply.data)  # the standard unpickler: LeRobot's own classes come back
    assert all(type(a) is lerobot_classes.TimedAction for a in actions)
    assert [a.timestep for a in actions] == [7, 8, 9]  # actions_per_chunk of the policy's 4
    assert [round(a.timestamp, 6) for a in actions] == [100.0, 100.1, 100.2]  # + i / fps
    openpi = served.infer({"observation/image": images[0], "observation/wrist_image": images[1],
                           "observation/state": state, "prompt": raw["task"]})["actions"]  # fmt: skip
    np.testing.assert_array_equal(np.stack([a.action.numpy() for a in actions]), openpi[:3])
    # the same state again, a later timestep: skipped as LeRobot's server does; must_go is answered
    send(client, lerobot_classes, raw, timestep=8)
    assert client.GetActions(wire.Empty()).data == b""
    send(client, lerobot_classes, raw, timestep=8, must_go=True)
    assert [a.timestep for a in pickle.loads(client.GetActions(wire.Empty()).data)] == [8, 9, 10]


def test_cameras_map_by_rename_map_and_a_large_observation_arrives_in_chunks(client, lerobot_classes):
    renamed = {"observation.images.front": "observation.images.corner",
               "observation.images.wrist": "observation.images.gripperPOV"}  # fmt: skip
    setup(client, lerobot_classes, feats=features(cameras=("front", "wrist")), rename_map=renamed)
    raw, _, _ = recorded_step(1)
    raw["front"], raw["wrist"] = raw.pop("corner"), raw.pop("gripperPOV")
    raw["padding"] = np.zeros(3 * 1024 * 1024, np.uint8)  # > 2 MiB: BEGIN, END
    payload = pickle.dumps(lerobot_classes.TimedObservation(0.0, 0, raw, True))
    assert [m.transfer_state for m in wire.chunked(payload)] == [wire.BEGIN, wire.END]
    client.SendObservations(iter(wire.chunked(payload)))
    assert len(pickle.loads(client.GetActions(wire.Empty()).data)) == 4


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"feats": features(JOINTS[:3])}, "observation.state: 3 numbers"),
        ({"feats": features(cameras=("corner",))}, "cameras ['corner']: the policy reads 2"),
        ({"feats": features(cameras=("corner", "top"))}, "some but not all"),
    ],
)
def test_mismatched_features_are_refused_in_one_line(client, lerobot_classes, kw, expected):
    with pytest.raises(grpc.RpcError) as err:
        setup(client, lerobot_classes, **kw)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and expected in err.value.details()


def test_a_pickle_naming_any_other_class_is_refused_unrun(client, lerobot_classes, tmp_path):
    setup(client, lerobot_classes)
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    with pytest.raises(grpc.RpcError) as err:
        client.SendObservations(iter(wire.chunked(pickle.dumps(Payload()))))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "is not accepted" in err.value.details()
    assert not marker.exists()
    with pytest.raises(grpc.RpcError) as err:  # a policy type it does not serve
        config = lerobot_classes.RemotePolicyConfig("act", "x", features(), 4)
        client.SendPolicyInstructions(wire.PolicySetup(data=pickle.dumps(config)))
    assert "policy_type='act'" in err.value.details()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--policy-dir", "/nonexistent"], "--policy-dir=/nonexistent: no config.json"),
        (["--policy-dir", str(POLICY), "--fps", "0"], "--fps=0.0: must be > 0"),
        (["--policy-dir", str(POLICY), "--port", "70000"], "--port=70000: must be 0..65535"),
    ],
)
def test_bad_flags_are_one_line_before_serving(capsys, argv, expected):
    from toolkits.deploy.serve_lerobot import main

    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2 and expected in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_session_keeps_its_registry_version_until_it_sends_ready_again(tmp_path, lerobot_classes):
    from toolkits.deploy.policy_source import RegistryFollower
    from toolkits.deploy.registry import PolicyRegistry

    reg = PolicyRegistry.create(tmp_path / "reg")
    reg.publish_directory(POLICY)
    follower = RegistryFollower(reg, lambda d: ServedPolicy(d, seed=0), interval=3600)
    servicer = AsyncInferenceServicer(follower, obs_timeout=0.3)
    server, port = start_server(servicer, "127.0.0.1", 0)
    channel, stub = stub_for(port)
    try:
        setup(stub, lerobot_classes)
        reg.publish_directory(POLICY)  # version 2, same interface
        assert follower.check() and follower.version == 2
        (session,) = servicer.sessions.values()
        assert session.version == 1 and follower.status()["held"] == {1: 1}  # mid-session: still version 1
        setup(stub, lerobot_classes)  # Ready: a new session, on the current version
        (session,) = servicer.sessions.values()
        assert session.version == 2 and follower.status()["held"] == {2: 1}
    finally:
        channel.close()
        server.stop(grace=None)
        follower.close()
