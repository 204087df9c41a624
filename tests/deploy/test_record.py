"""Recording what the server serves (``--record``): outcome messages acknowledged, episodes written in the
episode format with steps that line up, unknown outcomes, concurrent clients, bad control messages; and
the online finetuning loop serve -> record -> label -> train -> serve through openpi's own client."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests.assets import QUICKSTART_TASKS, REPO
from tests.deploy.conftest import CAMERAS, NO_OPENPI_CLIENT, POLICY_DIR, observation

pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
from openpi_client.websocket_client_policy import WebsocketClientPolicy  # noqa: E402
from websockets.exceptions import ConnectionClosedError  # noqa: E402

from toolkits.episodes import EpisodeDataset  # noqa: E402


@pytest.fixture
def recording(served, tmp_path):
    """A server recording into ``tmp_path/rec``; yields the ``ServerThread``."""
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread

    with ServerThread(PolicyServer(served, port=0, record=str(tmp_path / "rec"))) as thread:
        yield thread


def connect(thread) -> WebsocketClientPolicy:
    """openpi's client on a server thread."""
    return WebsocketClientPolicy("127.0.0.1", thread.server.port)


def wait_for_episodes(root: str, count: int, timeout: float = 20.0) -> EpisodeDataset:
    """The dataset once its index lists ``count`` episodes (the writer thread saves them off the loop)."""
    deadline = time.monotonic() + timeout
    while True:
        ds = EpisodeDataset(root)
        if len(ds) >= count or time.monotonic() > deadline:
            return ds
        time.sleep(0.05)


def end(success, final: dict | None = None) -> dict:
    """An ``episode_end`` message."""
    return {"episode_end": True, "success": success, **(final or {})}


def step(seed: int) -> dict:
    """A ``record_step`` message with the observation of ``seed``."""
    return {"record_step": True, **observation(seed)}


def test_outcome_is_acknowledged_once_the_episode_is_written_in_the_episode_format(recording, served):
    root = recording.server.recorder.root
    assert recording.server.metadata["recording"] is True
    assert len(EpisodeDataset(root)) == 0  # a readable, empty dataset from the start
    client = connect(recording)
    chunk = client.infer(observation(0))["actions"]
    assert [client.infer(step(s)) for s in (1, 2)] == [
        {"record_step": True, "step": 1, "recording": True},
        {"record_step": True, "step": 2, "recording": True},
    ]
    ack = client.infer(end(True, observation(3)))
    assert ack == {"episode_end": True, "recording": True, "steps": 3, "outcome": "success",
                   "file": "episodes/episode_000000.h5"}  # fmt: skip
    ds = EpisodeDataset(root)  # on disk when the answer comes
    ep = ds[0]
    assert ep.images.shape == (4, 2, 64, 64, 3) and ep.state.shape == (4, 39) and ep.actions.shape == (3, 4)
    for t in range(4):
        np.testing.assert_array_equal(ep.images[t, 0], observation(t)["observation/image"])
        np.testing.assert_array_equal(ep.images[t, 1], observation(t)["observation/wrist_image"])
        np.testing.assert_array_equal(ep.state[t], observation(t)["observation/state"])
    np.testing.assert_array_equal(ep.actions, chunk[:3])  # the chunk's actions, one per recorded step
    assert ep.success.tolist() == [False, False, True] and ep.rewards.tolist() == [0.0, 0.0, 1.0]
    assert {k: ep.meta[k] for k in ("prompt", "task", "task_id", "cameras", "image_size", "success_once")} == {
        "prompt": "reach the goal position", "task": "reach-v3", "task_id": 0, "cameras": CAMERAS,
        "image_size": 64, "success_once": True,
    }  # fmt: skip
    assert ds.info["cameras"] == CAMERAS and ds.summary["reach-v3"]["success_rate"] == 1.0

    # the next episode on the same connection, without a final observation: its last action is dropped
    client.infer(observation(10, prompt="drawer-close-v3"))
    client.infer(step(11))
    ack = client.infer(end(False))
    assert (ack["steps"], ack["outcome"], ack["file"]) == (1, "failure", "episodes/episode_000001.h5")
    ep = EpisodeDataset(root)[1]
    assert ep.images.shape[0] == 2 and ep.actions.shape[0] == 1 and ep.meta["task"] == "drawer-close-v3"
    assert ep.success.tolist() == [False] and ep.meta["outcome"] == "failure"
    with pytest.raises(RuntimeError, match="record_step: no action chunk to continue"):
        client.infer(step(12))  # a new episode starts with an observation
    assert len(wait_for_episodes(root, 2)) == 2  # nothing recorded for the failed start


def test_without_record_the_control_messages_are_acknowledged(server):
    client = connect(server)
    assert server.server.metadata["recording"] is False
    client.infer(observation(0))
    assert client.infer(step(1)) == {"record_step": True, "step": 1, "recording": False}
    assert client.infer(end(None)) == {"episode_end": True, "recording": False, "steps": 0,
                                       "outcome": "unknown", "file": None}  # fmt: skip
    assert client.infer(observation(2))["actions"].shape == (4, 4)
    client._ws.close()


def test_connection_closed_without_outcome_saves_an_unknown_outcome(recording):
    root = recording.server.recorder.root
    client = connect(recording)
    client.infer(observation(0))
    client.infer(step(1))
    client._ws.close()
    ds = wait_for_episodes(root, 1)
    assert len(ds) == 1 and ds.entries[0]["outcome"] == "unknown" and ds.entries[0]["success_once"] is None
    assert ds[0].actions.shape == (1, 4) and ds[0].success.tolist() == [False]
    assert len(EpisodeDataset(root, success=True)) == 0  # never taken for a success
    assert ds.summary["reach-v3"] == {
        "episodes": 1,
        "success": 0,
        "failure": 0,
        "unknown": 1,
        "success_rate": None,
    }
    client = connect(recording)
    client.infer(observation(5))
    assert client.infer(end(None, observation(6)))["outcome"] == "unknown"  # unknown, said explicitly
    client._ws.close()
    assert len(wait_for_episodes(root, 2)) == 2


def test_32_concurrent_clients_record_separate_episodes(recording):
    root = recording.server.recorder.root
    clients, barrier = 32, threading.Barrier(32)  # 32 robots recording at once
    prompts = list(QUICKSTART_TASKS)

    def run(c: int) -> dict:
        client = connect(recording)
        barrier.wait(timeout=60)
        steps = 2 + c % 3
        seeds = [1000 * (c + 1) + k for k in range(steps + 1)]
        client.infer(observation(seeds[0], prompt=prompts[c % 3]))
        for s in seeds[1:steps]:
            client.infer(step(s) | {"prompt": prompts[c % 3]})
        ack = client.infer(end(c % 2 == 0, observation(seeds[steps], prompt=prompts[c % 3])))
        client._ws.close()
        return {"seeds": seeds, "ack": ack, "task": prompts[c % 3], "success": c % 2 == 0}

    with ThreadPoolExecutor(clients) as pool:
        runs = list(pool.map(run, range(clients)))
    ds = wait_for_episodes(root, clients)
    assert len(ds) == clients and len({r["ack"]["file"] for r in runs}) == clients
    by_file = {e["file"]: i for i, e in enumerate(ds.entries)}
    for r in runs:
        ep = ds[by_file[r["ack"]["file"]]]
        assert ep.length == r["ack"]["steps"] == len(r["seeds"]) - 1
        expected = np.stack([observation(s)["observation/state"] for s in r["seeds"]])
        np.testing.assert_array_equal(ep.state, expected)  # only this client's observations, in order
        assert ep.meta["task"] == r["task"] and ep.meta["success_once"] is r["success"]


@pytest.mark.parametrize(
    ("before", "message", "error"),
    [
        (0, end("yes"), r"episode_end: success='yes' is a str \(allowed: true, false, null\)"),
        (0, end(1), r"episode_end: success=1 is a int"),
        (0, {"episode_end": True}, r"episode_end: missing key 'success'"),
        (0, {"episode_end": False, "success": True}, r"episode_end: expected true, got False"),
        (0, end(True, {"observation/state": np.zeros(39, np.float32)}), r"missing observation keys"),
        (0, step(1), r"record_step: no action chunk to continue"),
        (1, {**step(1), "record_step": "yes"}, r"record_step: expected true"),
        (4, step(9), r"record_step: all 4 actions of the chunk were executed"),
    ],
)
def test_bad_control_message_gets_the_protocols_error_and_the_open_episode_is_kept(
    recording, before, message, error
):
    root = recording.server.recorder.root
    client = connect(recording)
    if before:
        client.infer(observation(0))
        for s in range(1, before):
            client.infer(step(s))
    with pytest.raises(RuntimeError, match=error) as err:
        client.infer(message)
    assert "\n" not in str(err.value).split("\n", 1)[1]  # one line after openpi's prefix
    with pytest.raises(ConnectionClosedError) as closed:
        client._ws.recv(timeout=5)
    assert closed.value.rcvd.code == 1011
    ds = wait_for_episodes(root, 1 if before > 1 else 0, timeout=5 if before > 1 else 0.3)
    assert [e["length"] for e in ds.entries] == ([before - 1] if before > 1 else [])
    assert all(e["outcome"] == "unknown" for e in ds.entries)


def test_long_episodes_are_cut_and_a_restarted_recorder_appends(served, tmp_path):
    from toolkits.deploy.record import EpisodeRecorder
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread

    root = str(tmp_path / "rec")
    with ServerThread(PolicyServer(served, port=0, record=root, record_max_steps=2)) as thread:
        client = connect(thread)
        client.infer(observation(0))
        for s in (1, 2, 3):
            client.infer(step(s))
        ack = client.infer(end(True, observation(4)))
        client._ws.close()
    ds = EpisodeDataset(root)
    assert [e["outcome"] for e in ds.entries] == ["unknown", "success"] and ack["steps"] == 2
    np.testing.assert_array_equal(ds[0].state[-1], ds[1].state[0])  # the cut's last frame starts the next
    assert [len(ds[i].actions) for i in range(2)] == [2, 2]
    again = EpisodeRecorder(root, served)
    assert len(again.writer.index["episodes"]) == 2  # continued, not overwritten
    again.close()
    index = json.loads((Path(root) / "index.json").read_text())
    index["info"]["cameras"] = ["corner"]
    (Path(root) / "index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=r"holds episodes with cameras=\['corner'\]"):
        PolicyServer(served, port=0, record=root)


def test_online_loop_serve_record_label_train_serve(served, tmp_path, capsys):
    """serve --record -> robot_client (openpi's client, Meta-World) -> the episodes load and line up ->
    reward_models.label -> advantage-conditioned imitation from the served policy -> the result serves."""
    from policy_and_value.offline.config import SFTConfig
    from policy_and_value.offline.train_sft import train_sft
    from reward_models.label import label_dataset
    from toolkits.base.compose import compose_config
    from toolkits.deploy.robot_client import main as robot_client
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread
    from toolkits.deploy.served import ServedPolicy

    rec, steps = str(tmp_path / "rec"), 12
    with ServerThread(PolicyServer(served, port=0, record=rec)) as thread:
        code = robot_client(["--port", str(thread.server.port), "--tasks", "reach-v3", "drawer-close-v3",
                             "--episodes", "1", "--max-episode-steps", str(steps)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and f"the server recorded 2 episodes ({2 * steps} steps)" in out, out
    ds = EpisodeDataset(rec)
    assert sorted(ds.tasks) == ["drawer-close-v3", "reach-v3"]
    for i in range(len(ds)):
        ep = ds[i]
        assert ep.images.shape == (steps + 1, 2, 64, 64, 3) and ep.actions.shape == (steps, 4)
        assert ep.meta["outcome"] in ("success", "failure") and ep.meta["final_observation"]
        # every step's observation follows the one before (Meta-World's state repeats the previous frame)
        np.testing.assert_array_equal(ep.state[1:, 18:36], ep.state[:-1, :18])
        for t in range(0, steps, 4):  # each query's chunk is the 4 actions recorded from there
            obs = {"observation/image": ep.images[t, 0], "observation/wrist_image": ep.images[t, 1],
                   "observation/state": ep.state[t], "prompt": ep.meta["prompt"]}  # fmt: skip
            np.testing.assert_array_equal(served.infer(obs)["actions"], ep.actions[t : t + 4])

    labelled = str(tmp_path / "labelled")
    label_dataset(str(REPO / "assets" / "quickstart" / "reward_model"), rec, labelled, horizon=4)
    assert EpisodeDataset(labelled).read(0, "advantages").shape == (steps,)
    overrides = [f"data.path={labelled}", f"output_dir={tmp_path / 'sft'}", f"init_model_dir={POLICY_DIR}",
                 "data.success_only=false", "data.holdout_fraction=0", "model.pi0.with_advantage_condition=true",
                 "train.max_steps=2", "train.batch_size=4", "train.warmup_steps=1", "train.log_interval=1",
                 "train.save_interval=2"]  # fmt: skip
    policy_dir = train_sft(
        SFTConfig.model_validate(compose_config("offline/sft_pi0_tiny", overrides)), log=print
    )

    finetuned = ServedPolicy(policy_dir, cameras=CAMERAS, tasks=list(QUICKSTART_TASKS), seed=0)
    with ServerThread(PolicyServer(finetuned, port=0)) as thread:
        client = connect(thread)
        actions = client.infer(observation(0))["actions"]
        client._ws.close()
    assert actions.shape == (4, 4) and np.isfinite(actions).all()
