"""LeRobot datasets (format v3.0: parquet + mp4 + ``meta/``) from and to the project's episode format.

    python -m toolkits.episodes.lerobot export --data data/mt10 --out data/mt10_lerobot [--fps 80]
    python -m toolkits.episodes.lerobot import --data data/mt10_lerobot --out data/mt10_back

Written without the ``lerobot`` package (its pins conflict with ours): pyarrow for the parquet files,
the ffmpeg bundled with imageio-ffmpeg for the videos (h264). An episode of T actions and T+1
observations becomes T+1 LeRobot frames; the last frame holds the final observation and repeats the
last action. On import, the last frame's action, ``next.reward`` and ``next.success`` are dropped, so
any LeRobot v3 episode of N frames becomes a project episode of N-1 actions. The full mapping is in
README.md here.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import imageio_ffmpeg
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from toolkits.episodes.format import FORMAT_NAME, FORMAT_VERSION, Episode, EpisodeDataset, EpisodeWriter

CODEBASE_VERSION = "v3.0"
CHUNK_FILE = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = "data/" + CHUNK_FILE + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE + ".mp4"
EPISODES_PATH = "meta/episodes/" + CHUNK_FILE + ".parquet"
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
PROJECT_PATH = "meta/worldrl.json"  # the project's dataset info and summary (LeRobot ignores the file)
IMAGE_PREFIX = "observation.images."
PROJECT_COLUMN = "worldrl/"  # prefix of the per-episode project columns in meta/episodes
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
PIX_FMTS = ("yuv420p", "yuv444p")
# LeRobot's frame bookkeeping columns (lerobot.utils.constants.DEFAULT_FEATURES), in its order.
DEFAULT_FEATURES = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
_OBJ = ["x", "y", "z", "q0", "q1", "q2", "q3"]
_FRAME = ["hand_x", "hand_y", "hand_z", "gripper_distance"] + [f"obj{i}_{a}" for i in (1, 2) for a in _OBJ]
METAWORLD_STATE_NAMES = _FRAME + [f"prev_{n}" for n in _FRAME] + ["goal_x", "goal_y", "goal_z"]
METAWORLD_ACTION_NAMES = ["delta_x", "delta_y", "delta_z", "gripper"]


class LeRobotFormatError(ValueError):
    """A dataset or an option that this converter cannot use; the message names the file or key."""


# ---------------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------------


def _next_shard(chunk_index: int, file_index: int, chunks_size: int) -> tuple[int, int]:
    """The (chunk, file) after the given one: ``chunks_size`` files per chunk folder, as LeRobot counts."""
    return (chunk_index + 1, 0) if file_index + 1 >= chunks_size else (chunk_index, file_index + 1)


def _stats(x: np.ndarray) -> dict[str, np.ndarray]:
    """LeRobot's per-feature statistics of ``x`` [N, D] over frames: min, max, mean, std, count, quantiles."""
    x = x.astype(np.float64)
    out = {
        "min": x.min(axis=0),
        "max": x.max(axis=0),
        "mean": x.mean(axis=0),
        "std": x.std(axis=0),
        "count": np.array([len(x)]),
    }
    for q, v in zip(QUANTILES, np.quantile(x, QUANTILES, axis=0)):
        out[f"q{round(q * 100):02d}"] = v
    return out


def _image_stats(frames: np.ndarray) -> dict[str, np.ndarray]:
    """Per-channel statistics of uint8 frames [N, H, W, 3] in [0, 1], shaped (3, 1, 1) as LeRobot keeps
    them; computed on at most 100 frames of at most ~150 pixels a side (LeRobot also samples)."""
    n, h, w = frames.shape[:3]
    step_t, step_s = max(1, -(-n // 100)), max(1, -(-max(h, w) // 150))
    sample = frames[::step_t, ::step_s, ::step_s].reshape(-1, 3)
    s = _stats(sample.astype(np.float64) / 255.0)
    s["count"] = np.array([len(frames[::step_t])])
    return {k: v if k == "count" else v.reshape(3, 1, 1) for k, v in s.items()}


def _aggregate(stats: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Dataset statistics from per-episode ones, as LeRobot aggregates them: pooled mean and variance,
    overall min/max, and for quantiles the envelope (min of the lower, max of the upper ones)."""
    counts = np.array([s["count"][0] for s in stats], dtype=np.float64)
    shape = (-1,) + (1,) * (stats[0]["mean"].ndim)
    w = counts.reshape(shape) / counts.sum()
    means = np.stack([s["mean"] for s in stats])
    mean = (w * means).sum(axis=0)
    var = (w * (np.stack([s["std"] for s in stats]) ** 2 + (means - mean) ** 2)).sum(axis=0)
    out = {
        "min": np.min([s["min"] for s in stats], axis=0),
        "max": np.max([s["max"] for s in stats], axis=0),
        "mean": mean,
        "std": np.sqrt(var),
        "count": np.array([int(counts.sum())]),
    }
    for q in QUANTILES:
        key = f"q{round(q * 100):02d}"
        out[key] = (np.min if q <= 0.5 else np.max)([s[key] for s in stats], axis=0)
    return out


def _tasks_table(prompts: list[str]) -> pa.Table:
    """``meta/tasks.parquet``: one row per task string, ``task_index`` with the task as the (pandas)
    index, which is how LeRobot writes and reads it (``pd.read_parquet`` restores the index)."""

    def column(name: str | None, pandas_type: str, numpy_type: str) -> dict[str, Any]:
        """pandas' description of one column."""
        return {
            "name": name,
            "field_name": name,
            "pandas_type": pandas_type,
            "numpy_type": numpy_type,
            "metadata": None,
        }

    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [{**column(None, "unicode", "object"), "metadata": {"encoding": "UTF-8"}}],
        "columns": [column("task_index", "int64", "int64"), column("task", "unicode", "object")],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.3",
    }
    table = pa.table({"task_index": pa.array(range(len(prompts)), pa.int64()), "task": pa.array(prompts)})
    return table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})


def _typed_column(values: list[Any]) -> pa.Array | None:
    """An arrow column for one scalar meta attribute across episodes (None where missing), or None when
    the values are not all bool, all numbers or all strings (then only the JSON column has them)."""
    present = [v for v in values if v is not None]
    kinds = {bool if isinstance(v, bool) else int if isinstance(v, int) else type(v) for v in present}
    if not present or kinds not in ({bool}, {int}, {float}, {int, float}, {str}):
        return None
    if kinds == {bool}:
        return pa.array(values, pa.bool_())
    if kinds == {int}:
        return pa.array(values, pa.int64())
    if kinds <= {int, float}:
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array(values, pa.string())


# ---------------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------------


class _DataFiles:
    """Frame rows into ``data/chunk-XXX/file-YYY.parquet``, one row group per episode, starting a new
    file when the next episode would take the current one past ``max_mb`` (uncompressed)."""

    def __init__(self, root: str, schema: pa.Schema, max_mb: float, chunks_size: int):
        self.root, self.schema, self.max_bytes, self.chunks_size = root, schema, max_mb * 2**20, chunks_size
        self.shard = (0, 0)
        self.writer: pq.ParquetWriter | None = None
        self.bytes = 0

    def write(self, table: pa.Table) -> tuple[int, int]:
        """Append one episode's rows; returns its (chunk_index, file_index)."""
        if self.writer is not None and self.bytes + table.nbytes > self.max_bytes:
            self.close()
            self.shard = _next_shard(*self.shard, self.chunks_size)
        if self.writer is None:
            path = os.path.join(
                self.root, DATA_PATH.format(chunk_index=self.shard[0], file_index=self.shard[1])
            )
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.writer = pq.ParquetWriter(path, self.schema, compression="snappy")
            self.bytes = 0
        self.writer.write_table(table)
        self.bytes += table.nbytes
        return self.shard

    def close(self) -> None:
        """Finish the current file."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class _VideoFiles:
    """The frames of one camera, all episodes concatenated, into ``videos/KEY/chunk-XXX/file-YYY.mp4``
    (h264, constant frame rate), starting a new file at an episode boundary once a file reaches ``max_mb``."""

    def __init__(
        self,
        root: str,
        key: str,
        size: tuple[int, int],
        fps: int,
        encoder: dict[str, Any],
        max_mb: float,
        chunks_size: int,
    ):
        self.root, self.key, self.size, self.fps, self.encoder = root, key, size, fps, encoder
        self.max_bytes, self.chunks_size = max_mb * 2**20, chunks_size
        self.shard = (0, 0)
        self.path = ""
        self.writer: Any = None
        self.frames = 0

    def _open(self) -> None:
        """Start ffmpeg (libx264) on the current (chunk, file) path."""
        self.path = os.path.join(
            self.root,
            VIDEO_PATH.format(video_key=self.key, chunk_index=self.shard[0], file_index=self.shard[1]),
        )
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        (h, w), enc = self.size, self.encoder
        self.writer = imageio_ffmpeg.write_frames(
            self.path,
            (w, h),
            fps=self.fps,
            codec="libx264",
            quality=None,
            pix_fmt_out=enc["pix_fmt"],
            macro_block_size=1,
            ffmpeg_log_level="error",
            output_params=["-crf", str(enc["crf"]), "-g", str(enc["g"]), "-preset", enc["preset"]],
        )
        self.writer.send(None)
        self.frames = 0

    def write(self, frames: np.ndarray) -> dict[str, Any]:
        """Append one episode's frames [N, H, W, 3]; returns its ``videos/KEY/...`` episode columns."""
        written = os.path.getsize(self.path) if os.path.exists(self.path) else 0  # ffmpeg may not have begun
        if self.writer is not None and written >= self.max_bytes:
            self.close()
            self.shard = _next_shard(*self.shard, self.chunks_size)
        if self.writer is None:
            self._open()
        start = self.frames
        self.writer.send(np.ascontiguousarray(frames, dtype=np.uint8))
        self.frames += len(frames)
        prefix = f"videos/{self.key}/"
        return {
            prefix + "chunk_index": self.shard[0],
            prefix + "file_index": self.shard[1],
            prefix + "from_timestamp": start / self.fps,
            prefix + "to_timestamp": self.frames / self.fps,
        }

    def close(self) -> None:
        """Finish the current file (ffmpeg writes the mp4 index)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _features(
    state_dim: int,
    action_dim: int,
    cameras: list[str],
    size: tuple[int, int],
    fps: int,
    encoder: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    """``info.json`` features: state, action, the ``next.*`` columns, one video per camera, then
    LeRobot's bookkeeping columns."""
    metaworld = state_dim == len(METAWORLD_STATE_NAMES) and action_dim == len(METAWORLD_ACTION_NAMES)
    video_info = {
        "video.height": size[0],
        "video.width": size[1],
        "video.codec": "h264",
        "video.pix_fmt": encoder["pix_fmt"],
        "video.fps": fps,
        "video.channels": 3,
        "video.g": encoder["g"],
        "video.crf": encoder["crf"],
        "video.preset": encoder["preset"],
        "video.fast_decode": 0,
        "video.extra_options": {},
        "has_audio": False,
        "is_depth_map": False,
    }
    features: dict[str, dict[str, Any]] = {
        "observation.state": {
            "dtype": "float32",
            "shape": [state_dim],
            "names": METAWORLD_STATE_NAMES if metaworld else [f"state_{i}" for i in range(state_dim)],
        },
        "action": {
            "dtype": "float32",
            "shape": [action_dim],
            "names": METAWORLD_ACTION_NAMES if metaworld else [f"action_{i}" for i in range(action_dim)],
        },
        "next.reward": {"dtype": "float32", "shape": [1], "names": None},
        "next.done": {"dtype": "bool", "shape": [1], "names": None},
        "next.success": {"dtype": "bool", "shape": [1], "names": None},
    }
    for cam in cameras:
        features[IMAGE_PREFIX + cam] = {
            "dtype": "video",
            "shape": [size[0], size[1], 3],
            "names": ["height", "width", "channels"],
            "info": dict(video_info),
        }
    return {**features, **json.loads(json.dumps(DEFAULT_FEATURES))}


def _frame_schema(state_dim: int, action_dim: int) -> pa.Schema:
    """Arrow types of the data parquet, as LeRobot (HF datasets) writes them: fixed-size float32 lists
    for vectors, plain columns for shape-(1,) features."""
    return pa.schema(
        [
            ("observation.state", pa.list_(pa.float32(), state_dim)),
            ("action", pa.list_(pa.float32(), action_dim)),
            ("next.reward", pa.float32()),
            ("next.done", pa.bool_()),
            ("next.success", pa.bool_()),
            ("timestamp", pa.float32()),
            ("frame_index", pa.int64()),
            ("episode_index", pa.int64()),
            ("index", pa.int64()),
            ("task_index", pa.int64()),
        ]
    )


def _whole(x: float) -> float | int:
    """``x`` as an int when it is one (info.json's sizes are ints in LeRobot's own datasets)."""
    return int(x) if float(x).is_integer() else x


def _fixed_list(x: np.ndarray) -> pa.Array:
    """A [N, D] float32 array as an arrow fixed-size-list column."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), x.shape[1])


def _frame_columns(ep: Episode, e: int, first_index: int, task_index: int, fps: int) -> dict[str, np.ndarray]:
    """The T+1 LeRobot frames of one episode, column by column: the final observation's frame repeats
    the last action, has reward 0, the last success flag and ``next.done``."""
    n, T = ep.length + 1, ep.length
    last_action = ep.actions[-1:] if T else np.zeros((1, ep.actions.shape[1]), np.float32)
    success = np.asarray(ep.success, dtype=bool)
    return {
        "observation.state": ep.state.astype(np.float32),
        "action": np.concatenate([ep.actions, last_action]).astype(np.float32),
        "next.reward": np.append(ep.rewards, 0.0).astype(np.float32),
        "next.done": np.arange(n) == n - 1,
        "next.success": np.append(success, success[-1] if T else False),
        "timestamp": (np.arange(n) / fps).astype(np.float32),
        "frame_index": np.arange(n, dtype=np.int64),
        "episode_index": np.full(n, e, dtype=np.int64),
        "index": np.arange(first_index, first_index + n, dtype=np.int64),
        "task_index": np.full(n, task_index, dtype=np.int64),
    }


def export_lerobot(
    src_root: str,
    out_root: str,
    fps: int = 80,
    robot_type: str = "sawyer",
    crf: int = 18,
    pix_fmt: str = "yuv420p",
    gop: int = 2,
    preset: str = "medium",
    chunks_size: int = 1000,
    data_file_mb: float = 100,
    video_file_mb: float = 200,
) -> dict[str, Any]:
    """Write the episode dataset ``src_root`` as the LeRobot v3.0 dataset ``out_root`` (a new folder,
    built beside it and renamed when complete); returns its ``info.json``."""
    if os.path.exists(out_root):
        raise FileExistsError(f"--out {out_root} exists; choose a new directory")
    if not isinstance(fps, int) or fps <= 0:
        raise LeRobotFormatError(f"--fps {fps!r}: a positive whole number of frames per second is needed")
    if pix_fmt not in PIX_FMTS:
        raise LeRobotFormatError(f"--pix-fmt {pix_fmt!r}: allowed are {', '.join(PIX_FMTS)}")
    if not 0 <= crf <= 51:
        raise LeRobotFormatError(f"--crf {crf}: libx264 takes 0 (lossless) to 51")
    if gop < 1 or chunks_size < 1 or data_file_mb <= 0 or video_file_mb <= 0:
        raise LeRobotFormatError(
            f"--gop {gop}, --chunks-size {chunks_size}, --data-file-mb {data_file_mb}, "
            f"--video-file-mb {video_file_mb}: all must be positive"
        )
    ds = EpisodeDataset(src_root)
    if len(ds) == 0:
        raise LeRobotFormatError(f"--data {src_root}: index.json lists no episodes")
    first = ds[0]
    _, n_views, height, width, _ = first.images.shape
    state_dim, action_dim = first.state.shape[1], first.actions.shape[1]
    cameras = list(
        first.meta.get("cameras") or ds.info.get("cameras") or [f"view{i}" for i in range(n_views)]
    )
    if len(cameras) != n_views:
        raise LeRobotFormatError(f"{src_root}: episode 0 has {n_views} views but cameras {cameras}")
    if pix_fmt == "yuv420p" and (height % 2 or width % 2):
        raise LeRobotFormatError(
            f"{src_root}: image size {height}x{width}: libx264 with yuv420p needs an even height and width; "
            "use --pix-fmt yuv444p"
        )
    encoder = {"pix_fmt": pix_fmt, "crf": crf, "g": gop, "preset": preset}
    features = _features(state_dim, action_dim, cameras, (height, width), fps, encoder)
    stat_keys = list(features)

    tmp = out_root.rstrip("/") + ".tmp"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(os.path.join(tmp, "meta"))
    data = _DataFiles(tmp, _frame_schema(state_dim, action_dim), data_file_mb, chunks_size)
    videos = {
        cam: _VideoFiles(tmp, IMAGE_PREFIX + cam, (height, width), fps, encoder, video_file_mb, chunks_size)
        for cam in cameras
    }
    prompts: list[str] = []
    rows: list[dict[str, Any]] = []
    metas: list[dict[str, Any]] = []
    ep_stats: list[dict[str, dict[str, np.ndarray]]] = []
    total = 0
    try:
        for e in range(len(ds)):
            ep = first if e == 0 else ds[e]
            entry = {k: v for k, v in ds.entries[e].items() if k not in ("file", "length")}
            meta = {**ep.meta, **entry}
            if (
                ep.images.shape[1:] != (n_views, height, width, 3)
                or ep.state.shape[1] != state_dim
                or ep.actions.shape[1] != action_dim
            ):
                raise LeRobotFormatError(
                    f"{src_root}: episode {e} ({ds.entries[e]['file']}) has images {ep.images.shape[1:]}, "
                    f"state {ep.state.shape[1]}, actions {ep.actions.shape[1]}; episode 0 has "
                    f"{(n_views, height, width, 3)}, {state_dim}, {action_dim} (one size per dataset)"
                )
            prompt = str(meta.get("prompt") or meta.get("task") or "")
            if prompt not in prompts:
                prompts.append(prompt)
            n = ep.length + 1
            cols = _frame_columns(ep, e, total, prompts.index(prompt), fps)
            table = pa.table(
                {k: _fixed_list(v) if v.ndim == 2 else pa.array(v) for k, v in cols.items()},
                schema=data.schema,
            )
            chunk, file = data.write(table)
            row: dict[str, Any] = {
                "episode_index": e,
                "tasks": [prompt],
                "length": n,
                "data/chunk_index": chunk,
                "data/file_index": file,
                "dataset_from_index": total,
                "dataset_to_index": total + n,
            }
            stats = {k: _stats(v.reshape(n, -1)) for k, v in cols.items()}
            for v, cam in enumerate(cameras):
                row.update(videos[cam].write(ep.images[:, v]))
                stats[IMAGE_PREFIX + cam] = _image_stats(ep.images[:, v])
            row["meta/episodes/chunk_index"], row["meta/episodes/file_index"] = 0, 0
            for key in stat_keys:
                for name, value in stats[key].items():
                    row[f"stats/{key}/{name}"] = value.tolist()
            rows.append(row)
            metas.append(meta)
            ep_stats.append(stats)
            total += n
    except BaseException:
        data.close()
        for video in videos.values():
            video.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    data.close()
    for video in videos.values():
        video.close()

    columns = {k: pa.array([r[k] for r in rows]) for k in rows[0]}
    for k in ("episode_index", "length", "dataset_from_index", "dataset_to_index"):
        columns[k] = pa.array([r[k] for r in rows], pa.int64())
    columns[PROJECT_COLUMN + "meta_json"] = pa.array([json.dumps(m) for m in metas], pa.string())
    for key in dict.fromkeys(k for m in metas for k in m):
        col = _typed_column([m.get(key) for m in metas])
        if col is not None and "/" not in key and key != "meta_json":
            columns[PROJECT_COLUMN + key] = col
    episodes_path = os.path.join(tmp, EPISODES_PATH.format(chunk_index=0, file_index=0))
    os.makedirs(os.path.dirname(episodes_path))
    pq.write_table(pa.table(columns), episodes_path, compression="snappy")
    pq.write_table(_tasks_table(prompts), os.path.join(tmp, TASKS_PATH))
    stats_json = {
        k: {s: v.tolist() for s, v in _aggregate([st[k] for st in ep_stats]).items()} for k in stat_keys
    }
    with open(os.path.join(tmp, STATS_PATH), "w") as f:
        json.dump(stats_json, f, indent=4)
    info = {
        "codebase_version": CODEBASE_VERSION,
        "robot_type": robot_type,
        "total_episodes": len(rows),
        "total_frames": total,
        "total_tasks": len(prompts),
        "chunks_size": chunks_size,
        "data_files_size_in_mb": _whole(data_file_mb),
        "video_files_size_in_mb": _whole(video_file_mb),
        "fps": fps,
        "splits": {"train": f"0:{len(rows)}"},
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH,
        "features": features,
    }
    with open(os.path.join(tmp, INFO_PATH), "w") as f:
        json.dump(info, f, indent=4)
    with open(os.path.join(tmp, PROJECT_PATH), "w") as f:
        project = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "exported_from": src_root}
        json.dump({**project, "info": ds.info, "summary": ds.summary}, f, indent=1)
    os.replace(tmp, out_root)
    return info


# ---------------------------------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------------------------------


def _load_json(path: str) -> dict[str, Any]:
    """A JSON object from ``path``, or a one-line error naming the file."""
    try:
        with open(path) as f:
            obj = json.load(f)
    except json.JSONDecodeError as err:
        raise LeRobotFormatError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(obj, dict):
        raise LeRobotFormatError(f"{path}: a JSON object is expected, found {type(obj).__name__}")
    return obj


def read_info(src_root: str) -> dict[str, Any]:
    """``meta/info.json`` of a LeRobot v3 dataset, checked for what the import needs (one-line errors)."""
    path = os.path.join(src_root, INFO_PATH)
    if not os.path.isfile(path):
        raise LeRobotFormatError(f"{src_root}: no {INFO_PATH}; not a LeRobot dataset")
    info = _load_json(path)
    version = info.get("codebase_version")
    if not (isinstance(version, str) and version.startswith("v3.")):
        raise LeRobotFormatError(
            f"{path}: codebase_version {version!r}, expected 'v3.0' (v3.x); convert older datasets with "
            "lerobot's convert_dataset_v21_to_v30 first"
        )
    for key, kind, what in (
        ("fps", (int, float), "number"),
        ("features", dict, "object"),
        ("data_path", str, "path template"),
    ):
        if not isinstance(info.get(key), kind) or isinstance(info.get(key), bool):
            raise LeRobotFormatError(f"{path}: key {key!r} is {info.get(key)!r}; expected a {what}")
    features = info["features"]
    for key in ("observation.state", "action"):
        if key not in features:
            raise LeRobotFormatError(f"{path}: features has no {key!r} (has {sorted(features)})")
    cams = [k for k, ft in features.items() if ft.get("dtype") in ("video", "image")]
    if not cams:
        raise LeRobotFormatError(f"{path}: features has no camera (dtype 'video' or 'image'); one is needed")
    shapes = {k: tuple(features[k].get("shape", ())) for k in cams}
    if len(set(shapes.values())) > 1 or len(next(iter(shapes.values()))) != 3 or shapes[cams[0]][2] != 3:
        raise LeRobotFormatError(f"{path}: camera shapes {shapes}; one [height, width, 3] for all is needed")
    if any(features[k]["dtype"] == "video" for k in cams) and not isinstance(info.get("video_path"), str):
        raise LeRobotFormatError(f"{path}: key 'video_path' is {info.get('video_path')!r}; videos need it")
    return info


def _read_parquet_dir(root: str, folder: str) -> pa.Table:
    """All ``folder/chunk-*/file-*.parquet`` files of a dataset as one table (without stats columns)."""
    paths = sorted(
        os.path.join(root, folder, chunk, name)
        for chunk in (
            os.listdir(os.path.join(root, folder)) if os.path.isdir(os.path.join(root, folder)) else []
        )
        for name in os.listdir(os.path.join(root, folder, chunk))
        if name.endswith(".parquet")
    )
    if not paths:
        raise LeRobotFormatError(f"{root}: no {folder}/chunk-*/file-*.parquet; not a LeRobot v3 dataset")
    tables = []
    for path in paths:
        names = pq.read_schema(path).names
        tables.append(pq.read_table(path, columns=[n for n in names if not n.startswith("stats/")]))
    return pa.concat_tables(tables, promote_options="default")


def _numpy(column: pa.ChunkedArray | pa.Array, n: int) -> np.ndarray:
    """A numeric arrow column (scalars or equal-length lists) as a numpy array [n, D]."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if (
        pa.types.is_list(arr.type)
        or pa.types.is_fixed_size_list(arr.type)
        or pa.types.is_large_list(arr.type)
    ):
        arr = arr.flatten()
    return arr.to_numpy(zero_copy_only=False).reshape(n, -1)


class _VideoReader:
    """Frames of one camera read in order from its mp4 files (a file is reopened only to go back)."""

    def __init__(self, size: tuple[int, int]):
        self.size = size
        self.path = ""
        self.frames: Iterator[bytes] | None = None
        self.pos = 0

    def read(self, path: str, start: int, n: int) -> np.ndarray:
        """Frames ``start`` to ``start + n`` of ``path`` as uint8 [n, H, W, 3]."""
        if path != self.path or start < self.pos or self.frames is None:
            self.close()
            if not os.path.isfile(path):
                raise LeRobotFormatError(f"{path}: video file missing")
            self.frames = imageio_ffmpeg.read_frames(path, pix_fmt="rgb24")
            meta = next(self.frames)
            if tuple(meta["size"]) != (self.size[1], self.size[0]):
                raise LeRobotFormatError(
                    f"{path}: frames are {meta['size']} (w, h); info.json says {self.size}"
                )
            self.path, self.pos = path, 0
        out = np.empty((n, *self.size, 3), dtype=np.uint8)
        got = 0
        for frame in self.frames:
            if self.pos >= start:
                out[got] = np.frombuffer(frame, np.uint8).reshape(*self.size, 3)
                got += 1
            self.pos += 1
            if got == n:
                return out
        raise LeRobotFormatError(f"{path}: {self.pos} frames; frames {start} to {start + n} are needed")

    def close(self) -> None:
        """Stop the ffmpeg reader."""
        if self.frames is not None:
            self.frames.close()  # type: ignore[attr-defined]
            self.frames = None


def _decode_images(column: pa.ChunkedArray, key: str) -> np.ndarray:
    """Frames stored in the parquet itself (dtype 'image': PNG/JPEG bytes) as uint8 [n, H, W, 3]."""
    from PIL import Image

    frames = []
    for item in column.to_pylist():
        if not item or not item.get("bytes"):
            raise LeRobotFormatError(f"column {key!r}: a frame without embedded image bytes")
        frames.append(np.asarray(Image.open(io.BytesIO(item["bytes"])).convert("RGB")))
    return np.stack(frames)


def import_lerobot(src_root: str, out_root: str) -> int:
    """Write the LeRobot v3 dataset ``src_root`` as the episode dataset ``out_root`` (a new folder, built
    beside it and renamed when complete); returns the number of episodes."""
    if os.path.exists(out_root):
        raise FileExistsError(f"--out {out_root} exists; choose a new directory")
    info = read_info(src_root)
    features, fps = info["features"], info["fps"]
    cam_keys = [k for k, ft in features.items() if ft["dtype"] in ("video", "image")]
    cameras = [k.removeprefix(IMAGE_PREFIX).removeprefix("observation.") for k in cam_keys]
    height, width = (int(d) for d in features[cam_keys[0]]["shape"][:2])
    tasks_path = os.path.join(src_root, TASKS_PATH)
    if not os.path.isfile(tasks_path):
        raise LeRobotFormatError(f"{src_root}: no {TASKS_PATH}")
    tasks_table = pq.read_table(tasks_path)
    task_col = next((c for c in ("task", "__index_level_0__") if c in tasks_table.column_names), None)
    if task_col is None or "task_index" not in tasks_table.column_names:
        raise LeRobotFormatError(
            f"{tasks_path}: columns {tasks_table.column_names}; 'task' and 'task_index' needed"
        )
    task_of = dict(zip(tasks_table["task_index"].to_pylist(), tasks_table[task_col].to_pylist()))
    episodes = _read_parquet_dir(src_root, "meta/episodes").to_pylist()
    episodes.sort(key=lambda r: r["episode_index"])
    project_path = os.path.join(src_root, PROJECT_PATH)
    project = _load_json(project_path) if os.path.isfile(project_path) else {}

    tmp = out_root.rstrip("/") + ".tmp"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    task_names: list[str] = []
    image_size = height if height == width else [height, width]
    base_info = (
        project["info"]
        if "info" in project
        else {
            "fps": fps,
            "robot_type": info.get("robot_type"),
            "cameras": cameras,
            "image_size": image_size,
        }
    )
    writer = EpisodeWriter(tmp, {**base_info, "imported_from": src_root})
    readers = {key: _VideoReader((height, width)) for key in cam_keys if features[key]["dtype"] == "video"}
    data_cache: tuple[str, pa.Table, np.ndarray] | None = None
    summary_rows: dict[str, list[bool]] = {}
    try:
        for ep in episodes:
            e, n = int(ep["episode_index"]), int(ep["length"])
            where = f"{src_root}: episode {e}"
            if n < 1:
                raise LeRobotFormatError(f"{where}: length {n}; at least one frame is needed")
            data_path = os.path.join(
                src_root,
                info["data_path"].format(
                    chunk_index=ep["data/chunk_index"], file_index=ep["data/file_index"]
                ),
            )
            if data_cache is None or data_cache[0] != data_path:
                if not os.path.isfile(data_path):
                    raise LeRobotFormatError(f"{where}: data file {data_path} missing")
                table = pq.read_table(data_path)
                needed = ("observation.state", "action", "episode_index", "frame_index")
                missing = [k for k in needed if k not in table.column_names]
                if missing:
                    raise LeRobotFormatError(
                        f"{data_path}: no column {missing[0]!r} (has {table.column_names})"
                    )
                data_cache = (data_path, table, table["episode_index"].to_numpy())
            _, table, ep_col = data_cache
            rows = table.filter(pa.array(ep_col == e))
            if rows.num_rows != n:
                raise LeRobotFormatError(
                    f"{where}: {rows.num_rows} rows in {data_path}; meta/episodes says {n}"
                )
            order = pa.array(np.argsort(rows["frame_index"].to_numpy(), kind="stable"))
            rows = rows.take(order)
            state = _numpy(rows["observation.state"], n).astype(np.float32)
            action = _numpy(rows["action"], n).astype(np.float32)
            reward = (
                _numpy(rows["next.reward"], n)[:, 0].astype(np.float32)
                if "next.reward" in rows.column_names
                else np.zeros(n, np.float32)
            )
            success = (
                _numpy(rows["next.success"], n)[:, 0].astype(bool)
                if "next.success" in rows.column_names
                else np.zeros(n, bool)
            )
            views = []
            for key in cam_keys:
                if features[key]["dtype"] == "image":
                    views.append(_decode_images(rows[key], key))
                    continue
                path = os.path.join(
                    src_root,
                    info["video_path"].format(
                        video_key=key,
                        chunk_index=ep[f"videos/{key}/chunk_index"],
                        file_index=ep[f"videos/{key}/file_index"],
                    ),
                )
                start = int(round(float(ep[f"videos/{key}/from_timestamp"]) * fps))
                views.append(readers[key].read(path, start, n))
            images = np.stack(views, axis=1)
            if images.shape[2:] != (height, width, 3):
                raise LeRobotFormatError(
                    f"{where}: frames {images.shape[2:]}; info.json says {(height, width, 3)}"
                )
            meta_json = ep.get(PROJECT_COLUMN + "meta_json")
            if meta_json:
                meta = json.loads(meta_json)
            else:
                prompt = task_of.get(int(rows["task_index"][0].as_py()), (ep.get("tasks") or [""])[0])
                if prompt not in task_names:
                    task_names.append(prompt)
                meta = {
                    "prompt": prompt,
                    "task": prompt,
                    "task_id": task_names.index(prompt),
                    "cameras": cameras,
                    "image_size": image_size,
                    "success_once": bool(success[: n - 1].any()),
                    "lerobot_episode_index": e,
                }
            writer.write(Episode(images, state, action[: n - 1], reward[: n - 1], success[: n - 1], meta))
            summary_rows.setdefault(str(meta.get("task")), []).append(bool(meta.get("success_once")))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        for reader in readers.values():
            reader.close()
    summary = project.get("summary") if project else None
    if summary is None:
        summary = {
            t: {"episodes": len(s), "success_rate": float(np.mean(s))} for t, s in summary_rows.items()
        }
    writer.close(summary)
    os.replace(tmp, out_root)
    return len(episodes)


# ---------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``export`` or ``import`` from the command line; bad input ends with one line naming it."""
    p = argparse.ArgumentParser(
        prog="python -m toolkits.episodes.lerobot", description=__doc__.splitlines()[0]
    )
    sub = p.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="episode dataset -> LeRobot v3.0 dataset")
    ex.add_argument("--data", required=True, help="episode dataset (index.json + episodes/)")
    ex.add_argument("--out", required=True, help="new directory for the LeRobot dataset")
    ex.add_argument("--fps", type=int, default=80, help="frames per second (Meta-World steps at 80 Hz)")
    ex.add_argument("--robot-type", default="sawyer")
    ex.add_argument("--crf", type=int, default=18, help="h264 quality: 0 lossless .. 51 worst")
    ex.add_argument("--pix-fmt", default="yuv420p", choices=PIX_FMTS, help="yuv444p keeps full colour detail")
    ex.add_argument("--gop", type=int, default=2, help="keyframe interval (small: fast random access)")
    ex.add_argument("--preset", default="medium", help="libx264 speed preset (ultrafast .. veryslow)")
    ex.add_argument("--chunks-size", type=int, default=1000, help="files per chunk folder")
    ex.add_argument("--data-file-mb", type=float, default=100, help="parquet file size before a new file")
    ex.add_argument("--video-file-mb", type=float, default=200, help="mp4 file size before a new file")
    im = sub.add_parser("import", help="LeRobot v3.0 dataset -> episode dataset")
    im.add_argument(
        "--data", required=True, help="LeRobot v3.0 dataset folder (meta/info.json, data/, videos/)"
    )
    im.add_argument("--out", required=True, help="new directory for the episode dataset")
    args = p.parse_args(argv)
    try:
        if args.command == "export":
            info = export_lerobot(
                args.data,
                args.out,
                fps=args.fps,
                robot_type=args.robot_type,
                crf=args.crf,
                pix_fmt=args.pix_fmt,
                gop=args.gop,
                preset=args.preset,
                chunks_size=args.chunks_size,
                data_file_mb=args.data_file_mb,
                video_file_mb=args.video_file_mb,
            )
            print(
                f"wrote {info['total_episodes']} episodes ({info['total_frames']} frames, "
                f"{info['total_tasks']} tasks) of {args.data} to {args.out} (LeRobot {CODEBASE_VERSION})"
            )
        else:
            n = import_lerobot(args.data, args.out)
            print(f"wrote {n} episodes of {args.data} to {args.out}")
    except (ValueError, FileExistsError, FileNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
