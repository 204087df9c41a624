"""Import: a LeRobot v3.0 dataset -> the project's episodes (frames decoded from the mp4 files)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any

import imageio_ffmpeg
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from toolkits.base.atomic import directory_written_atomically
from toolkits.episodes.format import Episode, EpisodeWriter
from toolkits.episodes.lerobot.layout import (
    IMAGE_PREFIX,
    INFO_PATH,
    PROJECT_COLUMN,
    PROJECT_PATH,
    TASKS_PATH,
    LeRobotFormatError,
)


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


def _import_episodes(
    src_root: str,
    info: dict[str, Any],
    episodes: list[dict[str, Any]],
    cam_keys: list[str],
    cameras: list[str],
    task_of: dict[int, str],
    writer: EpisodeWriter,
) -> dict[str, list[bool]]:
    """Each LeRobot episode of ``src_root`` (its frames, decoded views and metadata) through ``writer``; returns
    each task's successes in order, for the summary."""
    features, fps = info["features"], info["fps"]
    height, width = (int(d) for d in features[cam_keys[0]]["shape"][:2])
    image_size = height if height == width else [height, width]
    task_names: list[str] = []
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
    finally:
        for reader in readers.values():
            reader.close()
    return summary_rows


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
    with directory_written_atomically(out_root) as tmp:
        writer = EpisodeWriter(tmp, {**base_info, "imported_from": src_root})
        summary_rows = _import_episodes(src_root, info, episodes, cam_keys, cameras, task_of, writer)
        summary = project.get("summary") if project else None
        if summary is None:
            summary = {
                t: {"episodes": len(s), "success_rate": float(np.mean(s))} for t, s in summary_rows.items()
            }
        writer.close(summary)
    return len(episodes)
