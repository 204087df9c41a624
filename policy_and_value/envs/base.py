"""The batched environment contract shared by real simulators and the world-model env.

One env object holds ``num_envs`` environments and steps them together with a whole action chunk.
Observations are dicts of batched tensors (see ``Observation`` below); the runner never knows whether
the frames came from MuJoCo or from a learned dynamics model.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

# Observation keys (all batched over N envs):
#   "images":  uint8   [N, V, H, W, 3]  (absent for vector-observation envs such as gym CartPole)
#   "state":   float32 [N, S]
#   "prompt":  list[str] of length N
#   "task_id": int64   [N]
#   "time_left": float32 [N]  share of ``max_episode_steps`` still to run (1 at reset, 0 at the limit);
#                given by the simulators and the world-model env, read by a critic that sees the time left
Observation = dict[str, Any]

# info["episode"] (present when at least one episode finished during the call) holds tensors over the
# finished envs only, plus their indices:
#   "env_ids" int64 [K], "success_once" bool [K], "return" float32 [K], "episode_len" int64 [K]
EPISODE_KEYS = ("success_once", "return", "episode_len")


def assign_tasks(
    num_envs: int,
    num_tasks: int,
    rank: int = 0,
    group_size: int = 1,
    weights: Sequence[float] | None = None,
) -> np.ndarray:
    """Task index of each of a worker's envs. The global groups of ``group_size`` consecutive envs (the
    envs of one GRPO group share a start, so a task) take tasks in a fixed weighted round-robin: with
    ``weights`` each task gets that share of the groups, spread evenly; without, plain round-robin."""
    groups = (rank * num_envs + np.arange(num_envs)) // group_size
    if weights is None:
        return groups % num_tasks
    return weighted_round_robin(weights, int(groups.max()) + 1)[groups]


def time_left(steps: np.ndarray, max_episode_steps: int) -> torch.Tensor:
    """``obs["time_left"]`` [N]: the share of an episode's ``max_episode_steps`` each env has still to run."""
    left = 1.0 - np.asarray(steps, dtype=np.float64) / max(int(max_episode_steps), 1)
    return torch.as_tensor(np.clip(left, 0.0, 1.0), dtype=torch.float32)


def weighted_round_robin(weights: Sequence[float], length: int) -> np.ndarray:
    """The first ``length`` picks of smooth weighted round-robin over ``weights`` (nginx's): every prefix
    holds each index in proportion to its weight, within one pick; equal weights give 0, 1, 2, 0, 1, ..."""
    w = np.asarray(weights, dtype=np.float64)
    credit = np.zeros_like(w)
    picks = np.empty(length, dtype=np.int64)
    for i in range(length):
        credit += w
        picks[i] = int(np.argmax(credit))  # ties: the lowest index
        credit[picks[i]] -= w.sum()
    return picks


@dataclass(frozen=True)
class EnvSpec:
    """What a policy needs to know about an env to be built for it."""

    action_dim: int  # A (1 for a discrete action space: the action is the choice index)
    num_action_chunks: int  # C
    state_dim: int  # S
    image_shape: tuple[int, int, int] | None  # (V, H, W), None when the env gives no images
    tasks: tuple[str, ...]
    discrete_actions: int | None = None  # number of choices for a discrete action space
    action_low: tuple[float, ...] | None = None  # per-dimension bounds in env units
    action_high: tuple[float, ...] | None = None


class BatchedEnv(abc.ABC):
    """``num_envs`` environments stepped together, one action chunk at a time."""

    num_envs: int
    action_dim: int
    chunk: int  # actions per chunk_step call
    tasks: list[str]  # task names; obs["task_id"] indexes this list
    spec: EnvSpec

    @abc.abstractmethod
    def reset(
        self, env_ids: torch.Tensor | None = None, reset_state_ids: torch.Tensor | None = None
    ) -> tuple[Observation, dict]:
        """Reset the given envs (all when None), optionally to given reset states; returns the full batch obs."""

    @abc.abstractmethod
    def chunk_step(
        self, actions: torch.Tensor
    ) -> tuple[Observation, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """Execute ``actions [N, C, A]``; returns obs, rewards [N, C], terminated [N], truncated [N], info.

        Within a chunk, an env whose episode ends stops collecting reward (later rewards are 0). With
        ``auto_reset`` the env is reset at the end of the chunk and the returned obs is the new
        episode's first obs; ``terminated``/``truncated`` still report the finished episode, and
        ``info["final_obs"]`` holds the full-batch obs as it was before the reset (so a critic can
        bootstrap truncated episodes). ``info["episode"]`` is described above.
        """

    def get_state(self) -> Any:
        """Everything needed to continue the current episodes exactly (for checkpoints); None if unsupported."""
        return None

    def set_state(self, state: Any) -> None:
        """Restore what ``get_state`` returned."""
        if state is not None:
            raise NotImplementedError(f"{type(self).__name__} cannot restore env state")

    def offload(self) -> None:  # noqa: B027 - optional hook
        """Free accelerator memory between rollouts (``env.enable_offload``); simulators hold none."""

    def onload(self) -> None:  # noqa: B027 - optional hook
        """Undo ``offload`` before the next rollout."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release simulator resources."""


def env_task_names(env: BatchedEnv) -> list[str]:
    """The task each env of a multi-task ``env`` plays, by name: what a world-model env and a simulator
    stepped side by side must agree on (their task lists may be ordered differently)."""
    return [env.tasks[t] for t in env.task_ids]  # type: ignore[attr-defined]
