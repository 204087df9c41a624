"""Episode files: one HDF5 file per episode plus a dataset-level ``index.json`` (see README.md here).

Written once by ``toolkits.collect_episodes`` and read by imitation learning, world-model and
reward-model training through ``EpisodeDataset`` (lazy: frames are read only when asked for).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np

from toolkits.base.atomic import write_json_atomically

log = logging.getLogger("toolkits.episodes")
FORMAT_NAME = "worldrl-episodes"
FORMAT_VERSION = 1
INDEX = "index.json"


@dataclass
class Episode:
    """One episode: T actions and the T+1 observations around them."""

    images: np.ndarray  # uint8 [T+1, V, H, W, 3]
    state: np.ndarray  # float32 [T+1, S]
    actions: np.ndarray  # float32 [T, A]
    rewards: np.ndarray  # float32 [T]
    success: np.ndarray  # bool [T] (the env's success flag after each action)
    meta: dict[str, Any] = field(default_factory=dict)  # prompt, task, task_id, cameras, policy, ...

    @property
    def length(self) -> int:
        return int(self.actions.shape[0])


def read_index(path: str) -> dict[str, Any]:
    """A dataset's ``index.json``, checked to be this format and version (ValueError naming the file)."""
    with open(path) as f:
        index = json.load(f)
    if index.get("format") != FORMAT_NAME or index.get("version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: format {index.get('format')} v{index.get('version')}, expected {FORMAT_NAME} v{FORMAT_VERSION}"
        )
    return index


def read_meta(f: h5py.File) -> dict[str, Any]:
    """An episode file's metadata (each attribute JSON, as ``EpisodeWriter.write`` stores it)."""
    return {k: json.loads(v) for k, v in f.attrs.items()}


class EpisodeWriter:
    """Writes episodes into ``root`` and keeps ``index.json`` up to date (atomically replaced).

    With ``append`` an existing dataset in ``root`` is continued (its index and ``info`` kept, new
    episodes numbered after its own), so a restarted recorder never overwrites what is there."""

    def __init__(self, root: str, info: dict[str, Any] | None = None, append: bool = False):
        self.root = root
        os.makedirs(os.path.join(root, "episodes"), exist_ok=True)
        self.index: dict[str, Any] = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "info": info or {},
            "episodes": [],
        }
        self.adopted: list[str] = []
        path = os.path.join(root, INDEX)
        if append and os.path.isfile(path):
            self.index = read_index(path)
        if append:
            self.adopted = self._adopt_orphans()

    def _adopt_orphans(self) -> list[str]:
        """After a writer was killed between an episode's file and the index: list the whole episode files the
        index lacks (each renamed into place complete), in order, and remove half-written ``.tmp`` files."""
        folder = os.path.join(self.root, "episodes")
        listed = {e["file"] for e in self.index["episodes"]}
        adopted = []
        for name in sorted(os.listdir(folder)):
            if name.endswith(".tmp"):
                os.remove(os.path.join(folder, name))
                continue
            rel = os.path.join("episodes", name)
            if not name.endswith(".h5") or rel in listed:
                continue
            try:
                with h5py.File(os.path.join(self.root, rel), "r") as f:
                    meta = read_meta(f)
                    length = int(f["actions"].shape[0])
            except (OSError, KeyError, ValueError) as err:  # not one this writer made: kept aside, not read
                quarantine = os.path.join(self.root, "quarantine")
                os.makedirs(quarantine, exist_ok=True)
                os.replace(os.path.join(self.root, rel), os.path.join(quarantine, name))
                log.warning("%s: unreadable, moved to %s (%s)", rel, quarantine, " ".join(str(err).split()))
                continue
            self.index["episodes"].append({"file": rel, "length": length, **meta})
            adopted.append(rel)
        return adopted

    def write(self, ep: Episode) -> str:
        """Store one episode; returns its path relative to the dataset root."""
        number = len(self.index["episodes"])
        while os.path.exists(os.path.join(self.root, "episodes", f"episode_{number:06d}.h5")):
            number += 1  # never over a file already there
        rel = os.path.join("episodes", f"episode_{number:06d}.h5")
        path = os.path.join(self.root, rel)
        with h5py.File(path + ".tmp", "w") as f:
            f.create_dataset(
                "images",
                data=ep.images,
                chunks=(1, *ep.images.shape[1:]),
                compression="gzip",
                compression_opts=4,
            )
            f.create_dataset("state", data=ep.state.astype(np.float32))
            f.create_dataset("actions", data=ep.actions.astype(np.float32))
            f.create_dataset("rewards", data=ep.rewards.astype(np.float32))
            f.create_dataset("success", data=ep.success.astype(bool))
            for k, v in ep.meta.items():
                f.attrs[k] = json.dumps(v)
        os.replace(path + ".tmp", path)
        self.index["episodes"].append({"file": rel, "length": ep.length, **ep.meta})
        return rel

    def close(self, summary: dict[str, Any] | None = None) -> None:
        """Write ``index.json`` with an optional summary (e.g. success rate per task)."""
        if summary is not None:
            self.index["summary"] = summary
        write_json_atomically(os.path.join(self.root, INDEX), self.index)


class EpisodeDataset:
    """Episodes of a dataset root, optionally filtered by task and success; items load lazily."""

    def __init__(self, root: str, tasks: list[str] | None = None, success: bool | None = None):
        path = os.path.join(root, INDEX)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"{root}: no {INDEX}; is this a dataset written by toolkits.collect_episodes?"
            )
        index = read_index(path)
        self.root = root
        self.info = index.get("info", {})
        self.summary = index.get("summary", {})
        eps = index["episodes"]
        if tasks is not None:
            eps = [e for e in eps if e["task"] in tasks]
        if success is not None:
            eps = [e for e in eps if bool(e["success_once"]) == success]
        self.entries: list[dict[str, Any]] = eps

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> Episode:
        entry = self.entries[i]
        with h5py.File(os.path.join(self.root, entry["file"]), "r") as f:
            meta = read_meta(f)
            return Episode(
                f["images"][()], f["state"][()], f["actions"][()], f["rewards"][()], f["success"][()], meta
            )

    def read(self, i: int, key: str, index: Any = slice(None)) -> np.ndarray:
        """Part of one array without loading the rest (e.g. a few frames)."""
        with h5py.File(os.path.join(self.root, self.entries[i]["file"]), "r") as f:
            return f[key][index]

    @property
    def tasks(self) -> list[str]:
        return sorted({e["task"] for e in self.entries})
