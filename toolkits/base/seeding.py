"""Seeding and RNG snapshots of python, numpy and torch: what exact resume restores in every process."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def get_rng_state() -> dict[str, Any]:
    """Snapshot of every RNG this process uses."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``get_rng_state`` returned."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class RandomStream:
    """A random stream of its own, from ``seed``: draws made inside ``with stream:`` neither move the process's
    streams nor depend on them, and the next ``with`` goes on where the last one stopped (``restart`` begins again)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.state: dict[str, Any] | None = None
        self._outer: dict[str, Any] | None = None

    def restart(self) -> None:
        """The next draws repeat those after the seed."""
        self.state = None

    def __enter__(self) -> RandomStream:
        self._outer = get_rng_state()
        if self.state is None:
            seed_everything(self.seed)
        else:
            set_rng_state(self.state)
        return self

    def __exit__(self, *exc: object) -> None:
        self.state = get_rng_state()
        set_rng_state(self._outer)
