"""The episodes imagination starts from (``env.dynamics_model_image_root``), grouped by task and held in
memory: every imagined episode begins from one of their frames, with the frames before it as history."""

from __future__ import annotations

from typing import Any

import numpy as np

from policy_and_value.envs.metaworld_tasks import select_state


def load_reset_episodes(root: str, tasks: list[str], state_type: str) -> dict[int, list[dict[str, Any]]]:
    """Each task's episodes under ``root`` (task index -> [{images, state, prompt, actions}]), states cut to
    ``state_type``; a task without an episode is an error naming the root, since no env of it could reset."""
    from toolkits.episodes import EpisodeDataset

    data = EpisodeDataset(root, tasks=tasks)
    episodes: dict[int, list[dict[str, Any]]] = {t: [] for t in range(len(tasks))}
    for i in range(len(data)):
        ep = data[i]
        episodes[tasks.index(ep.meta["task"])].append(
            {"images": ep.images, "state": select_state(ep.state, state_type).astype(np.float32),
             "prompt": ep.meta["prompt"], "actions": ep.actions.astype(np.float32)}
        )  # fmt: skip
    empty = [tasks[t] for t, eps in episodes.items() if not eps]
    if empty:
        raise ValueError(f"env.dynamics_model_image_root={root}: no episodes of {empty}")
    return episodes
