"""LIBERO-shaped episodes made here for the LIBERO recipes' tests: the loop's three tasks, 64-px frames of both
cameras, LIBERO's 8-number state and 7-number actions, the first episode of each task successful."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from toolkits.recipes.libero_loop import TASKS

CAMERAS = ["agentview", "robot0_eye_in_hand"]


def write_libero_episodes(path: Path, per_task: int = 2, steps: int = 12) -> str:
    """``per_task`` episodes of ``steps`` actions a task into ``path`` (episode format); returns the path."""
    from toolkits.episodes import Episode, EpisodeWriter

    writer = EpisodeWriter(str(path), info={"cameras": CAMERAS, "image_size": 64})
    rng = np.random.default_rng(0)
    for task in TASKS:
        for i in range(per_task):
            success = np.zeros(steps, bool)
            success[-1] = i == 0
            meta = {"prompt": task.replace("_", " "), "task": task, "success_once": i == 0, "cameras": CAMERAS,
                    "image_size": 64}  # fmt: skip
            frames = rng.integers(0, 255, (steps + 1, 2, 64, 64, 3), dtype=np.uint8)
            states = rng.normal(size=(steps + 1, 8)).astype(np.float32)
            actions = rng.uniform(-1, 1, (steps, 7)).astype(np.float32)
            writer.write(Episode(frames, states, actions, success.astype(np.float32), success, meta))
    writer.close({})
    return str(path)
