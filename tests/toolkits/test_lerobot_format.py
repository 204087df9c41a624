"""LeRobot v3.0 export and import (toolkits.episodes.lerobot): layout, round trip, bad input."""

import json
import os

import imageio_ffmpeg
import numpy as np
import pyarrow.parquet as pq
import pytest

from toolkits.episodes import Episode, EpisodeDataset, EpisodeWriter
from toolkits.episodes.lerobot import LeRobotFormatError, export_lerobot, import_lerobot, main

CAMERAS = ["corner", "gripperPOV"]
EPISODES = [("reach-v3", "reach the goal position", 12, True), ("push-v3", "push the puck", 19, False),
            ("reach-v3", "reach the goal position", 15, True)]  # fmt: skip
FPS = 80


def _frames(T: int, e: int) -> np.ndarray:
    """Smooth moving colour gradients [T+1, V, 64, 64, 3] (compress well, so h264 keeps them close)."""
    t = np.arange(T + 1)[:, None, None, None]
    v = np.arange(len(CAMERAS))[None, :, None, None]
    y, x = np.mgrid[0:64, 0:64]
    r = 128 + 60 * np.sin(2 * np.pi * (x / 128 + t / 60 + e / 7))
    g = 128 + 60 * np.cos(2 * np.pi * (y / 128 - t / 70 + v / 3))
    b = 128 + 40 * np.sin(2 * np.pi * ((x + y) / 256 + t / 50 + v / 5))
    return np.stack(np.broadcast_arrays(r, g, b), axis=-1).round().astype(np.uint8)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> str:
    """3 episodes of 2 tasks, 2 camera views of 64x64, written by the project's own writer."""
    root = str(tmp_path_factory.mktemp("lerobot") / "episodes")
    w = EpisodeWriter(root, info={"cameras": CAMERAS, "image_size": 64, "seed": 3})
    rng = np.random.default_rng(0)
    for e, (task, prompt, T, ok) in enumerate(EPISODES):
        success = np.zeros(T, bool)
        success[-3:] = ok
        meta = {"prompt": prompt, "task": task, "task_id": int(task == "push-v3"), "cameras": CAMERAS,
                "image_size": 64, "success_once": ok, "policy": "expert", "action_noise": 0.1,
                "forced_failure": False, "reset_state_id": 7 + e, "seed": 3}  # fmt: skip
        w.write(
            Episode(
                _frames(T, e),
                rng.normal(size=(T + 1, 39)).astype(np.float32),
                rng.uniform(-1, 1, (T, 4)).astype(np.float32),
                rng.uniform(size=T).astype(np.float32),
                success,
                meta,
            )
        )
    w.close(
        {"reach-v3": {"episodes": 2, "success_rate": 1.0}, "push-v3": {"episodes": 1, "success_rate": 0.0}}
    )
    return root


@pytest.fixture(scope="module")
def exported(source, tmp_path_factory) -> str:
    """The source dataset exported with the default settings."""
    out = str(tmp_path_factory.mktemp("lerobot_out") / "lerobot")
    export_lerobot(source, out, fps=FPS)
    return out


def _count_frames(path: str) -> int:
    """Frames ffmpeg decodes from a video file."""
    gen = imageio_ffmpeg.read_frames(path)
    next(gen)
    return sum(1 for _ in gen)


def test_export_writes_the_v3_layout(exported):
    lengths = [T + 1 for *_, T, _ in EPISODES]
    total = sum(lengths)
    with open(os.path.join(exported, "meta/info.json")) as f:
        info = json.load(f)
    assert info["codebase_version"] == "v3.0" and info["fps"] == FPS and info["robot_type"] == "sawyer"
    assert (info["total_episodes"], info["total_frames"], info["total_tasks"]) == (3, total, 2)
    assert info["splits"] == {"train": "0:3"} and info["chunks_size"] == 1000
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    feats = info["features"]
    video_keys = [f"observation.images.{c}" for c in CAMERAS]
    frame_keys = ["observation.state", "action", "next.reward", "next.done", "next.success"]
    bookkeeping = ["timestamp", "frame_index", "episode_index", "index", "task_index"]
    assert list(feats) == frame_keys + video_keys + bookkeeping
    state = feats["observation.state"]
    assert state["shape"] == [39] and state["names"][:4] == ["hand_x", "hand_y", "hand_z", "gripper_distance"]
    assert feats["action"] == {
        "dtype": "float32",
        "shape": [4],
        "names": ["delta_x", "delta_y", "delta_z", "gripper"],
    }
    cam = feats[video_keys[0]]
    assert (
        cam["dtype"] == "video"
        and cam["shape"] == [64, 64, 3]
        and cam["names"] == ["height", "width", "channels"]
    )
    assert cam["info"]["video.codec"] == "h264" and cam["info"]["video.fps"] == FPS
    assert feats["timestamp"] == {"dtype": "float32", "shape": [1], "names": None}

    tasks = pq.read_table(os.path.join(exported, "meta/tasks.parquet"))
    assert tasks.to_pydict() == {"task_index": [0, 1], "task": ["reach the goal position", "push the puck"]}
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]

    data = pq.read_table(os.path.join(exported, "data/chunk-000/file-000.parquet")).to_pydict()
    assert list(data) == frame_keys + bookkeeping
    assert len(data["index"]) == total and data["index"] == list(range(total))
    starts = np.cumsum([0] + lengths)
    for e, n in enumerate(lengths):
        rows = slice(starts[e], starts[e + 1])
        assert data["episode_index"][rows] == [e] * n and data["frame_index"][rows] == list(range(n))
        assert np.allclose(data["timestamp"][rows], np.arange(n) / FPS)
        assert data["next.done"][rows] == [False] * (n - 1) + [True]
        assert data["task_index"][rows] == [int(EPISODES[e][0] == "push-v3")] * n
        assert data["action"][rows][-1] == data["action"][rows][-2]  # final observation: last action repeated

    eps = pq.read_table(os.path.join(exported, "meta/episodes/chunk-000/file-000.parquet")).to_pydict()
    assert eps["episode_index"] == [0, 1, 2] and eps["length"] == lengths
    assert eps["tasks"] == [["reach the goal position"], ["push the puck"], ["reach the goal position"]]
    assert (
        eps["dataset_from_index"] == starts[:-1].tolist() and eps["dataset_to_index"] == starts[1:].tolist()
    )
    assert eps["data/chunk_index"] == [0, 0, 0] and eps["data/file_index"] == [0, 0, 0]
    assert eps["worldrl/reset_state_id"] == [7, 8, 9] and eps["worldrl/success_once"] == [True, False, True]
    assert len(eps["stats/observation.state/mean"][0]) == 39
    for key in video_keys:
        assert eps[f"videos/{key}/chunk_index"] == [0, 0, 0] and eps[f"videos/{key}/file_index"] == [0, 0, 0]
        assert np.allclose(eps[f"videos/{key}/from_timestamp"], starts[:-1] / FPS)
        assert np.allclose(eps[f"videos/{key}/to_timestamp"], starts[1:] / FPS)
        assert _count_frames(os.path.join(exported, f"videos/{key}/chunk-000/file-000.mp4")) == total

    with open(os.path.join(exported, "meta/stats.json")) as f:
        stats = json.load(f)
    assert set(stats) == set(feats)
    assert stats["observation.state"]["count"] == [total] and len(stats["observation.state"]["mean"]) == 39
    assert np.array(stats[video_keys[0]]["mean"]).shape == (3, 1, 1)
    assert {"min", "max", "mean", "std", "count", "q01", "q50", "q99"} <= set(stats["action"])
    assert not os.path.exists(exported + ".tmp")


def test_import_round_trips_the_episodes(source, exported, tmp_path):
    back = str(tmp_path / "back")
    assert import_lerobot(exported, back) == 3
    a, b = EpisodeDataset(source), EpisodeDataset(back)
    assert len(b) == 3 and b.summary == a.summary and b.info == {**a.info, "imported_from": exported}
    for i in range(3):
        x, y = a[i], b[i]
        for k in ("state", "actions", "rewards", "success"):
            assert getattr(y, k).dtype == getattr(x, k).dtype and np.array_equal(
                getattr(y, k), getattr(x, k)
            ), k
        assert y.meta == x.meta and b.entries[i]["length"] == a.entries[i]["length"]
        assert y.images.shape == x.images.shape and y.images.dtype == np.uint8
        err = np.abs(y.images.astype(np.int16) - x.images).mean(axis=(0, 2, 3, 4))
        assert (err < 3.0).all(), err  # lossy h264: mean abs error per view under 3/255


def test_several_data_files_and_chunks_round_trip(source, tmp_path):
    out, back = str(tmp_path / "lr"), str(tmp_path / "back")
    main(["export", "--data", source, "--out", out, "--data-file-mb", "0.001", "--chunks-size", "2"])
    files = sorted(
        os.path.relpath(os.path.join(d, f), out)
        for d, _, fs in os.walk(os.path.join(out, "data"))
        for f in fs
    )
    assert files == ["data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet",
                     "data/chunk-001/file-000.parquet"]  # fmt: skip
    eps = pq.read_table(os.path.join(out, "meta/episodes/chunk-000/file-000.parquet")).to_pydict()
    assert eps["data/chunk_index"] == [0, 0, 1] and eps["data/file_index"] == [0, 1, 0]
    main(["import", "--data", out, "--out", back])
    a, b = EpisodeDataset(source), EpisodeDataset(back)
    for i in range(3):
        assert np.array_equal(a[i].state, b[i].state) and np.array_equal(a[i].actions, b[i].actions)


def test_import_of_a_dataset_without_project_metadata(exported, tmp_path):
    """Any LeRobot v3 dataset imports: prompts from tasks.parquet, cameras from the video keys, N frames
    become N-1 actions."""
    foreign = str(tmp_path / "foreign")
    os.makedirs(os.path.join(foreign, "meta/episodes/chunk-000"))
    for d in ("data", "videos"):
        os.symlink(os.path.join(exported, d), os.path.join(foreign, d))
    for f in ("info.json", "stats.json", "tasks.parquet"):
        os.symlink(os.path.join(exported, "meta", f), os.path.join(foreign, "meta", f))
    eps = pq.read_table(os.path.join(exported, "meta/episodes/chunk-000/file-000.parquet"))
    eps = eps.select([c for c in eps.column_names if not c.startswith("worldrl/")])
    pq.write_table(eps, os.path.join(foreign, "meta/episodes/chunk-000/file-000.parquet"))
    back = str(tmp_path / "back")
    import_lerobot(foreign, back)
    ds = EpisodeDataset(back)
    assert [ep["length"] for ep in ds.entries] == [T for *_, T, _ in EPISODES]
    assert (
        ds.entries[1]["prompt"] == ds.entries[1]["task"] == "push the puck" and ds.entries[1]["task_id"] == 1
    )
    assert ds.entries[0]["cameras"] == CAMERAS and ds.entries[0]["image_size"] == 64
    assert [ep["success_once"] for ep in ds.entries] == [True, False, True]
    assert ds.info["cameras"] == CAMERAS and ds.summary["reach the goal position"]["episodes"] == 2


def test_bad_input_gives_one_line_errors(source, exported, tmp_path):
    with pytest.raises(LeRobotFormatError, match=r"no meta/info.json; not a LeRobot dataset"):
        import_lerobot(source, str(tmp_path / "x"))
    old = str(tmp_path / "old")
    os.makedirs(os.path.join(old, "meta"))
    with open(os.path.join(exported, "meta/info.json")) as f:
        info = json.load(f)
    with open(os.path.join(old, "meta/info.json"), "w") as f:
        json.dump({**info, "codebase_version": "v2.1"}, f)
    with pytest.raises(SystemExit) as err:
        main(["import", "--data", old, "--out", str(tmp_path / "y")])
    msg = str(err.value)
    assert "\n" not in msg and "info.json" in msg and "codebase_version 'v2.1'" in msg and "v3.0" in msg
    with open(os.path.join(old, "meta/info.json"), "w") as f:
        json.dump({**info, "features": {k: v for k, v in info["features"].items() if k != "action"}}, f)
    with pytest.raises(LeRobotFormatError, match=r"features has no 'action'"):
        import_lerobot(old, str(tmp_path / "z"))
    assert not any(os.path.exists(str(tmp_path / n)) for n in ("x", "y", "z", "x.tmp", "y.tmp", "z.tmp"))
    with pytest.raises(FileExistsError, match="exists"):
        export_lerobot(source, exported)
    with pytest.raises(LeRobotFormatError, match=r"--pix-fmt 'yuv422p': allowed are yuv420p, yuv444p"):
        export_lerobot(source, str(tmp_path / "w"), pix_fmt="yuv422p")
    odd = str(tmp_path / "odd")
    w = EpisodeWriter(odd)
    meta = {"prompt": "p", "task": "t", "cameras": ["c"]}
    zeros = [
        np.zeros((3, 39), np.float32),
        np.zeros((2, 4), np.float32),
        np.zeros(2, np.float32),
        np.zeros(2, bool),
    ]
    w.write(Episode(np.zeros((3, 1, 63, 63, 3), np.uint8), *zeros, meta))
    w.close()
    with pytest.raises(
        LeRobotFormatError, match=r"63x63: libx264 with yuv420p needs an even height and width"
    ):
        export_lerobot(odd, str(tmp_path / "odd_lr"))
    assert not os.path.exists(str(tmp_path / "odd_lr"))


def test_a_failure_midway_leaves_no_dataset(exported, tmp_path):
    """An episode of another size, found after the first was written, stops the export with nothing at --out;
    an import over a stale temp folder from an interrupted run replaces it."""
    mixed = str(tmp_path / "mixed")
    w = EpisodeWriter(mixed)
    meta = {"prompt": "p", "task": "t", "cameras": ["c"]}
    for size in (64, 32):
        w.write(
            Episode(
                np.zeros((3, 1, size, size, 3), np.uint8),
                np.zeros((3, 39), np.float32),
                np.zeros((2, 4), np.float32),
                np.zeros(2, np.float32),
                np.zeros(2, bool),
                meta,
            )
        )
    w.close()
    out = str(tmp_path / "mixed_lr")
    with pytest.raises(LeRobotFormatError, match=r"episode 1 .*\(one size per dataset\)"):
        export_lerobot(mixed, out, fps=FPS)
    assert not os.path.exists(out) and not os.path.exists(out + ".tmp")
    back = str(tmp_path / "back")
    os.makedirs(os.path.join(back + ".tmp", "episodes"))
    with open(os.path.join(back + ".tmp", "episodes", "stale.h5"), "w") as f:
        f.write("half")
    assert import_lerobot(exported, back) == len(EPISODES)
    assert not os.path.exists(back + ".tmp") and "stale.h5" not in os.listdir(os.path.join(back, "episodes"))
