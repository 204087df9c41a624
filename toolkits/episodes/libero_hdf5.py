"""Import LIBERO's published demonstrations (robomimic-style HDF5, one file per task) as the project's
episodes, so users who have the official demos train on them.

    .venv/bin/python -m toolkits.episodes.libero_hdf5 --input DEMO.hdf5 [DEMO2.hdf5 | DIR ...] --out DIR \\
        [--image-size 64] [--max-demos N]

The layout read (LIBERO's ``create_dataset.py``): ``data`` with attributes ``problem_info`` (JSON holding
``language_instruction``) and ``bddl_file_name``; ``data/demo_N`` with ``actions`` [T, 7], ``dones`` [T]
and ``obs/agentview_rgb``, ``obs/eye_in_hand_rgb`` [T, H, W, 3], ``obs/ee_states`` [T, 6] (end-effector
position and axis-angle) and ``obs/gripper_states`` [T, 2]. Written as ``env_type: libero`` observes:
frames rotated 180 degrees (LIBERO stored robosuite's upside-down renders; openpi rotates them the same
way), cameras ``agentview`` and ``robot0_eye_in_hand``, state = ee_states + gripper_states (8). A demo
holds the observation before each action only, so the last observation is repeated after the last
action (``final_obs_repeated`` in the episode's attributes); ``success`` is ``dones``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator

import h5py
import numpy as np

from toolkits.episodes.format import Episode, EpisodeWriter

CAMERAS = {"agentview": "agentview_rgb", "robot0_eye_in_hand": "eye_in_hand_rgb"}
REQUIRED = (
    "actions",
    "dones",
    *(f"obs/{k}" for k in CAMERAS.values()),
    "obs/ee_states",
    "obs/gripper_states",
)


class LiberoHdf5Error(ValueError):
    """A file that is not in LIBERO's demonstration layout; the message names the file and the key."""


def _task_of(f: h5py.File, path: str) -> tuple[str, str]:
    """(task name, instruction) from the file's ``data`` attributes."""
    attrs = f["data"].attrs
    if "problem_info" not in attrs:
        raise LiberoHdf5Error(f"{path}: data has no problem_info attribute (not a LIBERO demo file)")
    info = json.loads(attrs["problem_info"])
    prompt = str(info.get("language_instruction", "")).strip()
    bddl = attrs.get("bddl_file_name", "")
    bddl = bddl.decode() if isinstance(bddl, bytes) else str(bddl)
    name = os.path.splitext(os.path.basename(bddl))[0] if bddl else prompt.replace(" ", "_")
    return name, prompt


def _resize(frames: np.ndarray, size: int | None) -> np.ndarray:
    if size is None or frames.shape[1:3] == (size, size):
        return frames
    from PIL import Image

    return np.stack([np.asarray(Image.fromarray(f).resize((size, size), Image.BILINEAR)) for f in frames])


def read_demos(path: str, image_size: int | None = None, max_demos: int | None = None) -> Iterator[Episode]:
    """The episodes of one LIBERO demo file, in demo order (``demo_0``, ``demo_1``, ...)."""
    with h5py.File(path, "r") as f:
        if "data" not in f:
            raise LiberoHdf5Error(f"{path}: no data group (not a LIBERO demo file)")
        task, prompt = _task_of(f, path)
        names = sorted((k for k in f["data"] if k.startswith("demo_")), key=lambda k: int(k.split("_")[1]))
        for name in names[:max_demos]:
            demo = f["data"][name]
            for key in REQUIRED:
                if key not in demo:
                    raise LiberoHdf5Error(f"{path}: data/{name} lacks {key!r}")
            actions = demo["actions"][()].astype(np.float32)
            dones = demo["dones"][()].astype(bool)
            obs = demo["obs"]
            views = [_resize(obs[key][()][:, ::-1, ::-1], image_size) for key in CAMERAS.values()]
            state = np.concatenate([obs["ee_states"][()], obs["gripper_states"][()]], axis=1)
            images = np.stack(views, axis=1)  # [T, V, H, W, 3]
            if not len(actions) == len(images) == len(state) == len(dones):
                raise LiberoHdf5Error(
                    f"{path}: data/{name} has {len(actions)} actions, {len(images)} frames, {len(state)} "
                    f"states and {len(dones)} dones (they must agree)"
                )
            yield Episode(
                images=np.concatenate([images, images[-1:]]),
                state=np.concatenate([state, state[-1:]]).astype(np.float32),
                actions=actions,
                rewards=dones.astype(np.float32),
                success=dones,
                meta={
                    "prompt": prompt, "task": task, "cameras": list(CAMERAS), "image_size": int(images.shape[2]),
                    "success_once": bool(dones.any()), "policy": "libero demonstration", "source": f"{path}:{name}",
                    "final_obs_repeated": True,
                },
            )  # fmt: skip


def import_demos(
    paths: list[str], out: str, image_size: int | None = None, max_demos: int | None = None
) -> int:
    """Write every demo of ``paths`` (files, or folders of ``*.hdf5``) into the dataset ``out``; returns
    how many episodes were written. ``task_id`` numbers the tasks in sorted order."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, n) for n in os.listdir(p) if n.endswith((".hdf5", ".h5")))
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise LiberoHdf5Error(f"{p}: no such file or directory")
    episodes = [ep for path in files for ep in read_demos(path, image_size, max_demos)]
    tasks = sorted({ep.meta["task"] for ep in episodes})
    writer = EpisodeWriter(out, info={"source": "libero hdf5", "inputs": files, "tasks": tasks})
    for ep in episodes:
        ep.meta["task_id"] = tasks.index(ep.meta["task"])
        writer.write(ep)
    summary = {t: {"episodes": sum(ep.meta["task"] == t for ep in episodes)} for t in tasks}
    writer.close(summary)
    return len(episodes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", nargs="+", required=True, help="LIBERO demo files or folders of them")
    p.add_argument("--out", required=True, help="the dataset folder to write")
    p.add_argument("--image-size", type=int, default=None, help="resize frames (default: keep)")
    p.add_argument("--max-demos", type=int, default=None, help="at most this many demos per file")
    args = p.parse_args(argv)
    try:
        n = import_demos(args.input, args.out, args.image_size, args.max_demos)
    except LiberoHdf5Error as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {n} episodes to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
