"""The server speaks openpi's protocol to openpi's own client: metadata on connect, one answer per
observation (the policy's un-normalised actions), errors as a text frame then close 1011, /healthz,
API keys, and images in any layout and size."""

import threading
import urllib.request

import numpy as np
import pytest

from tests.deploy.conftest import CAMERAS, NO_OPENPI_CLIENT, POLICY_DIR, observation

pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
import websockets.sync.client  # noqa: E402
from openpi_client import msgpack_numpy  # noqa: E402
from openpi_client.websocket_client_policy import WebsocketClientPolicy  # noqa: E402
from websockets.exceptions import ConnectionClosedError, InvalidStatus  # noqa: E402


def test_metadata_and_answers_through_openpi_client(server, served):
    client = WebsocketClientPolicy("127.0.0.1", server.server.port)
    meta = client.get_server_metadata()
    assert meta["cameras"] == CAMERAS
    assert meta["image_keys"] == ["observation/image", "observation/wrist_image"]
    assert meta["image_size"] == [64, 64] and meta["state_dim"] == 39
    assert meta["action_dim"] == 4 and meta["chunk_size"] == 4
    assert meta["prompts"]["reach-v3"] == "reach the goal position"
    for seed in range(3):
        obs = observation(seed)
        reply = client.infer(obs)
        assert reply["actions"].dtype == np.float32 and reply["actions"].shape == (4, 4)
        assert reply["server_timing"]["infer_ms"] > 0
        # the answer is the policy's own deterministic chunk for this observation, in env units
        np.testing.assert_array_equal(reply["actions"], served.infer(obs)["actions"])
    assert "prev_total_ms" in reply["server_timing"]
    client._ws.close()


def test_answer_is_the_policy_predict_from_the_observations_own_noise(served):
    """The answer is ``predict`` (eval, un-normalised, clipped to the bounds) from noise that depends on
    the observation: the same observation always gets the same chunk, another one other noise."""
    from policy_and_value.models.pi0 import from_pretrained

    policy = from_pretrained(POLICY_DIR).eval()
    obs = observation(7)
    batch = served.parse(obs)
    assert batch["prompt"] == ["reach the goal position"]  # the task name maps to its instruction
    noise = served.observation_noise(batch)
    expected = policy.predict(batch, mode="eval", noise=noise).actions[0].numpy()
    np.testing.assert_allclose(served.infer(obs)["actions"], np.clip(expected, -1, 1), atol=1e-6)
    np.testing.assert_array_equal(served.infer(obs)["actions"], served.infer(obs)["actions"])
    assert not np.array_equal(noise, served.observation_noise(served.parse(observation(8))))


def test_images_in_any_layout_dtype_and_size(server, served):
    client = WebsocketClientPolicy("127.0.0.1", server.server.port)
    obs = observation(3)
    expected = client.infer(obs)["actions"]
    chw = {**obs, "observation/image": np.ascontiguousarray(obs["observation/image"].transpose(2, 0, 1))}
    np.testing.assert_array_equal(client.infer(chw)["actions"], expected)
    as_float = {**obs, "observation/wrist_image": obs["observation/wrist_image"].astype(np.float32) / 255.0}
    np.testing.assert_array_equal(client.infer(as_float)["actions"], expected)
    for shape in [(480, 640, 3), (3, 32, 48), (7, 5, 3)]:
        big = {**observation(4), "observation/image": np.full(shape, 90, np.uint8)}
        assert client.infer(big)["actions"].shape == (4, 4)
    as_list = {
        **obs,
        "observation/state": obs["observation/state"].tolist(),
        "prompt": "reach the goal position",
    }
    np.testing.assert_allclose(client.infer(as_list)["actions"], expected, atol=1e-6)
    client._ws.close()


def test_bad_request_is_a_text_frame_then_close_1011(server):
    client = WebsocketClientPolicy("127.0.0.1", server.server.port)
    with pytest.raises(RuntimeError, match=r"observation/state: expected shape \[39\]"):
        client.infer({**observation(0), "observation/state": np.zeros(5, np.float32)})
    with pytest.raises(ConnectionClosedError) as closed:
        client._ws.recv(timeout=5)
    assert closed.value.rcvd.code == 1011


def test_healthz_and_api_key(served):
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread

    with ServerThread(PolicyServer(served, port=0, api_key="s3cret")) as thread:
        port = thread.server.port
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
            assert resp.status == 200
        for key in (None, "wrong"):
            with pytest.raises(InvalidStatus, match="401"):
                WebsocketClientPolicy("127.0.0.1", port, api_key=key)
        client = WebsocketClientPolicy("127.0.0.1", port, api_key="s3cret")
        assert client.infer(observation(1))["actions"].shape == (4, 4)
        client._ws.close()


def test_pings_are_answered_during_slow_inference(served, monkeypatch):
    """Inference runs off the event loop: a ping sent while the policy is busy comes back at once."""
    import time

    from toolkits.deploy.serve_policy import PolicyServer, ServerThread

    release = threading.Event()
    act_many = served.act_many

    def blocking(batches):
        release.wait(10)
        return act_many(batches)

    monkeypatch.setattr(served, "act_many", blocking)
    with ServerThread(PolicyServer(served, port=0)) as thread:
        url = f"ws://127.0.0.1:{thread.server.port}"
        with websockets.sync.client.connect(url, compression=None, max_size=None) as busy:
            busy.recv()
            busy.send(msgpack_numpy.packb(observation(0)))
            with websockets.sync.client.connect(url, compression=None, max_size=None) as other:
                other.recv()
                start = time.monotonic()
                assert other.ping().wait(5)
                assert time.monotonic() - start < 2.0
            release.set()
            reply = msgpack_numpy.unpackb(busy.recv(timeout=30))
            assert reply["actions"].shape == (4, 4)


def test_custom_keys_and_policy_dir_without_deploy_json_needs_cameras(tmp_path):
    import shutil

    from toolkits.deploy.served import ServedPolicy

    bare = tmp_path / "policy"  # an imitation output: no deploy.json
    shutil.copytree(POLICY_DIR, bare, ignore=shutil.ignore_patterns("deploy.json"))
    with pytest.raises(ValueError, match="no deploy.json; pass --cameras"):
        ServedPolicy(bare)
    served = ServedPolicy(bare, cameras=CAMERAS, image_keys=["cam/a", "cam/b"], state_key="s", prompt_key="p")
    obs = observation(2)
    custom = {"cam/a": obs["observation/image"], "cam/b": obs["observation/wrist_image"]}
    reply = served.infer({**custom, "s": obs["observation/state"], "p": "reach the goal position"})
    assert reply["actions"].shape == (4, 4)
    with pytest.raises(ValueError, match="one key per camera"):
        ServedPolicy(POLICY_DIR, cameras=CAMERAS, image_keys=["only_one"])


def test_serve_policy_cli_serves_until_terminated(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from tests.assets import REPO
    from toolkits.deploy.serve_policy import main

    assert main(["--policy-dir", str(tmp_path)]) == 2  # not a policy directory: one line, exit 2
    # the shipped directory as it is: cameras, sizes and prompts from its deploy.json
    cmd = [sys.executable, "-m", "toolkits.deploy.serve_policy", "--policy-dir", str(POLICY_DIR), "--port", "0",
           "--api-key", "k", "--record", str(tmp_path / "rec")]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving ") and f"cameras {CAMERAS}" in line, line
        port = int(line.split(" on ws://", 1)[1].split()[0].rsplit(":", 1)[1])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
            assert resp.status == 200
        client = WebsocketClientPolicy("127.0.0.1", port, api_key="k")
        assert client.infer(observation(0))["actions"].shape == (4, 4)
        client.infer({"record_step": True, **observation(1)})
        assert client.infer({"episode_end": True, "success": False})["file"] == "episodes/episode_000000.h5"
        client.infer(observation(2))
        client.infer({"record_step": True, **observation(3)})  # left open: saved (outcome unknown) at stop
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "stopped after 2 answers and 0 errors, episodes recorded: 2" in out, out
    from toolkits.episodes import EpisodeDataset

    assert [e["outcome"] for e in EpisodeDataset(str(tmp_path / "rec")).entries] == ["failure", "unknown"]
