"""The batched environment contract shared by real simulators and the world-model env.

One env object holds ``num_envs`` environments and steps them together with a whole action chunk.
Observations are dicts of batched tensors (see ``Observation`` below); the runner never knows whether
the frames came from MuJoCo or from a learned dynamics model.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

# Observation keys (all batched over N envs):
#   "images":  uint8   [N, V, H, W, 3]  (absent for vector-observation envs such as gym CartPole)
#   "state":   float32 [N, S]
#   "prompt":  list[str] of length N
#   "task_id": int64   [N]
Observation = dict[str, Any]

# info["episode"] (present when at least one episode finished during the call) holds tensors over the
# finished envs only, plus their indices:
#   "env_ids" int64 [K], "success_once" bool [K], "return" float32 [K], "episode_len" int64 [K]
EPISODE_KEYS = ("success_once", "return", "episode_len")


def assign_tasks(num_envs: int, num_tasks: int, rank: int = 0, group_size: int = 1) -> np.ndarray:
    """Task index of each of a worker's envs: tasks go round-robin over the global groups of
    ``group_size`` consecutive envs, so the envs of one GRPO group (one shared start) share a task."""
    return (rank * num_envs + np.arange(num_envs)) // group_size % num_tasks


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
