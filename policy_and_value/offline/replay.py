"""The chunks filtered imitation selected in earlier steps, imitated again (self-imitation replay).

With outcome rewards a training step holds only a few groups whose samples ended differently, so the
chunks it selects (``algorithm.imitation_min_advantage``) are few and the update on them alone is
mostly noise. Keeping the selected chunks of past steps (``algorithm.imitation_replay_size``, first in
first out) and imitating as many of them as each micro batch has rollout samples turns the policy's
own successes into a growing set of demonstrations (self-imitation learning). The buffer and its
generator are part of the actor's checkpoint, so a resumed run draws the same samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


class ImitationReplay:
    """A first-in-first-out store of (observation, executed chunk) pairs, sampled uniformly."""

    def __init__(self, capacity: int, seed: int):
        self.capacity = capacity
        self.gen = torch.Generator().manual_seed(seed)
        self.obs: dict[str, Any] = {}
        self.actions: torch.Tensor | None = None
        self.added = 0  # chunks ever added (the next write position is added % capacity)

    def __len__(self) -> int:
        return min(self.added, self.capacity)

    def add(self, obs: dict[str, Any], actions: torch.Tensor) -> None:
        """Store chunks: ``obs`` in the env contract with a leading sample dim (``prompt`` a list or an
        object array), ``actions`` [n, C, A]; the oldest are overwritten once the buffer is full."""
        n = actions.shape[0]
        if n == 0:
            return
        if self.actions is None:
            self.actions = torch.zeros(self.capacity, *actions.shape[1:], dtype=actions.dtype)
            for k, v in obs.items():
                if isinstance(v, torch.Tensor):
                    self.obs[k] = torch.zeros(self.capacity, *v.shape[1:], dtype=v.dtype)
                else:
                    self.obs[k] = np.empty(self.capacity, dtype=object)
        slots = (self.added + torch.arange(n)) % self.capacity
        keep = slice(max(0, n - self.capacity), n)  # more than fit at once: the newest
        slots = slots[keep]
        self.actions[slots] = actions[keep]
        for k, store in self.obs.items():
            if isinstance(store, torch.Tensor):
                store[slots] = obs[k][keep]
            else:
                store[slots.numpy()] = np.asarray(list(obs[k]), dtype=object)[keep]
        self.added += n

    def sample(self, n: int) -> dict[str, Any]:
        """``n`` stored chunks drawn uniformly, as a ``flow_matching_loss`` batch."""
        index = torch.randint(len(self), (n,), generator=self.gen)
        obs = {
            k: (v[index] if isinstance(v, torch.Tensor) else list(v[index.numpy()]))
            for k, v in self.obs.items()
        }
        return {"obs": obs, "actions": self.actions[index]}

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs to draw the same samples."""
        size = len(self)
        return {
            "added": self.added,
            "gen": self.gen.get_state(),
            "actions": None if self.actions is None else self.actions[:size].clone(),
            "obs": {
                k: (v[:size].clone() if isinstance(v, torch.Tensor) else v[:size].copy())
                for k, v in self.obs.items()
            },
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.gen.set_state(state["gen"])
        self.added = 0
        self.obs, self.actions = {}, None
        if state["actions"] is not None:
            self.add(state["obs"], state["actions"])  # into slots 0..size-1, as they were saved
        self.added = state["added"]
