"""Export: the project's episodes -> a LeRobot v3.0 dataset (parquet frames, mp4 videos, ``meta/``)."""

from __future__ import annotations

import json
import os
from typing import Any

import imageio_ffmpeg
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from toolkits.base.atomic import directory_written_atomically
from toolkits.episodes.format import FORMAT_NAME, FORMAT_VERSION, Episode, EpisodeDataset
from toolkits.episodes.lerobot.layout import (
    CODEBASE_VERSION,
    DATA_PATH,
    DEFAULT_FEATURES,
    EPISODES_PATH,
    IMAGE_PREFIX,
    INFO_PATH,
    METAWORLD_ACTION_NAMES,
    METAWORLD_STATE_NAMES,
    PIX_FMTS,
    PROJECT_COLUMN,
    PROJECT_PATH,
    STATS_PATH,
    TASKS_PATH,
    VIDEO_PATH,
    LeRobotFormatError,
    _aggregate,
    _image_stats,
    _next_shard,
    _stats,
    _tasks_table,
    _typed_column,
)


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


def _write_episodes(
    ds: EpisodeDataset,
    first: Episode,
    data: _DataFiles,
    videos: dict[str, _VideoFiles],
    fps: int,
    stat_keys: list[str],
) -> tuple[
    list[dict[str, Any]], list[dict[str, Any]], list[dict[str, dict[str, np.ndarray]]], list[str], int
]:
    """Each episode's frames into ``data`` and its views into ``videos``; returns the rows of
    ``meta/episodes``, each episode's metadata and statistics, the prompts in order and the frame count."""
    src_root = ds.root
    cameras = list(videos)
    _, n_views, height, width, _ = first.images.shape
    state_dim, action_dim = first.state.shape[1], first.actions.shape[1]
    prompts: list[str] = []
    rows: list[dict[str, Any]] = []
    metas: list[dict[str, Any]] = []
    ep_stats: list[dict[str, dict[str, np.ndarray]]] = []
    total = 0
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
    return rows, metas, ep_stats, prompts, total


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

    with directory_written_atomically(out_root) as tmp:
        os.makedirs(os.path.join(tmp, "meta"))
        data = _DataFiles(tmp, _frame_schema(state_dim, action_dim), data_file_mb, chunks_size)
        videos = {
            cam: _VideoFiles(
                tmp, IMAGE_PREFIX + cam, (height, width), fps, encoder, video_file_mb, chunks_size
            )
            for cam in cameras
        }
        try:
            rows, metas, ep_stats, prompts, total = _write_episodes(ds, first, data, videos, fps, stat_keys)
        finally:
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
    return info
