"""LeRobot v3.0 layout: paths, feature names, the frame bookkeeping columns and the statistics both
directions share."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

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
