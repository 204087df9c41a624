"""Checkpoint layout and atomic writes.

``<log_dir>/checkpoints/global_step_N/`` holds ``actor/`` (DCP: model, optimiser, scheduler),
``rollout/model.safetensors`` (the rollout's EMA weights), ``runner_state.pt`` (global step, every
worker's RNG state, env states) and ``config.yaml``. It is written under a temporary name and
renamed when complete, so a crash mid-save never leaves a half checkpoint under the final name.
"""

from __future__ import annotations

import os
import pickle
import shutil
from typing import Any

import torch

RUNNER_STATE = "runner_state.pt"


def step_dir(log_dir: str, step: int) -> str:
    return os.path.join(log_dir, "checkpoints", f"global_step_{step}")


def temp_dir_for(final: str) -> str:
    """Sibling temp path for an atomic write of ``final``; any stale one is removed."""
    tmp = os.path.join(os.path.dirname(final), f".tmp_{os.path.basename(final)}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    return tmp


def commit(tmp: str, final: str) -> None:
    """Atomically move a completed temp checkpoint into place and update ``latest``."""
    if os.path.exists(final):
        shutil.rmtree(final)
    os.replace(tmp, final)
    latest = os.path.join(os.path.dirname(final), "latest")
    with open(latest + ".tmp", "w") as f:
        f.write(os.path.basename(final) + "\n")
    os.replace(latest + ".tmp", latest)


def save_runner_state(directory: str, global_step: int, state: dict[str, Any]) -> None:
    """Non-weight state (RNGs, env states). Python objects are pickled into one bytes field."""
    torch.save(
        {"global_step": global_step, "state": pickle.dumps(state)}, os.path.join(directory, RUNNER_STATE)
    )


def load_runner_state(directory: str) -> tuple[int, dict[str, Any]]:
    """Read ``runner_state.pt``; only load checkpoints you wrote (the state field is a pickle)."""
    blob = torch.load(os.path.join(directory, RUNNER_STATE), weights_only=True)
    return int(blob["global_step"]), pickle.loads(blob["state"])  # noqa: S301 - own checkpoint
