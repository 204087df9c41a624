"""Checkpoint layout and atomic writes.

``<log_dir>/checkpoints/global_step_N/`` holds ``actor/`` (DCP: model, optimiser, scheduler),
``rollout/model.safetensors`` (the rollout's EMA weights), ``runner_state.pt`` (global step, every
worker's RNG state, env states) and ``config.yaml``. It is written under a temporary name and
renamed when complete, so a crash mid-save never leaves a half checkpoint under the final name.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
from typing import Any

import torch

RUNNER_STATE = "runner_state.pt"
ROLLOUT_WEIGHTS = os.path.join("rollout", "model.safetensors")


def optimizer_shard_file(actor_dir: str, rank: int, world_size: int) -> str:
    """Where actor rank ``rank`` keeps its optimiser shard (``actor.shard_optimizer``)."""
    return os.path.join(actor_dir, f"optimizer_shard_{rank}_of_{world_size}.pt")


def optimizer_shards(actor_dir: str) -> tuple[int, list[str]]:
    """(actor ranks the shards were saved by, the shard files present); (0, []) for an unsharded save."""
    import re

    names = sorted(n for n in os.listdir(actor_dir) if re.fullmatch(r"optimizer_shard_\d+_of_\d+\.pt", n))
    if not names:
        return 0, []
    return int(names[0].rsplit("_of_", 1)[1][:-3]), [os.path.join(actor_dir, n) for n in names]


class CheckpointError(ValueError):
    """A checkpoint file that is missing, truncated or unreadable; the message names the file."""


def verify_dcp_dir(dcp_dir: str) -> None:
    """The DCP ``.metadata`` reads and every data file it points to holds the bytes it says it does."""
    from torch.distributed.checkpoint import FileSystemReader

    meta_path = os.path.join(dcp_dir, ".metadata")
    if not os.path.isfile(meta_path):
        raise CheckpointError(f"{meta_path}: missing")
    try:
        storage = FileSystemReader(dcp_dir).read_metadata().storage_data
    except Exception as err:  # noqa: BLE001 - a truncated pickle raises anything from EOFError on
        raise CheckpointError(f"{meta_path}: unreadable ({type(err).__name__}: {err})") from None
    ends: dict[str, int] = {}
    for info in storage.values():
        ends[info.relative_path] = max(ends.get(info.relative_path, 0), info.offset + info.length)
    for name, end in sorted(ends.items()):
        path = os.path.join(dcp_dir, name)
        if not os.path.isfile(path):
            raise CheckpointError(f"{path}: missing (listed in {meta_path})")
        if os.path.getsize(path) < end:
            raise CheckpointError(
                f"{path}: truncated ({os.path.getsize(path)} bytes, the metadata needs {end})"
            )


def verify_checkpoint(directory: str) -> None:
    """Every file of a ``global_step_N`` checkpoint is present and complete, checked from headers and sizes
    (nothing is loaded): the runner state's zip directory, the actor's DCP files, the rollout safetensors."""
    import zipfile

    from safetensors import safe_open

    state = os.path.join(directory, RUNNER_STATE)
    if not os.path.isfile(state):
        raise CheckpointError(f"{state}: missing")
    if not zipfile.is_zipfile(state):
        raise CheckpointError(f"{state}: truncated or not a torch.save file")
    actor_dir = os.path.join(directory, "actor")
    verify_dcp_dir(actor_dir)
    ranks, _ = optimizer_shards(actor_dir) if os.path.isdir(actor_dir) else (0, [])
    for rank in range(ranks):
        shard = optimizer_shard_file(actor_dir, rank, ranks)
        if not os.path.isfile(shard):
            raise CheckpointError(f"{shard}: missing (the optimiser was sharded over {ranks} actor ranks)")
        if not zipfile.is_zipfile(shard):
            raise CheckpointError(f"{shard}: truncated or not a torch.save file")
    weights = os.path.join(directory, ROLLOUT_WEIGHTS)
    if not os.path.isfile(weights):
        raise CheckpointError(f"{weights}: missing")
    try:
        with safe_open(weights, "pt"):
            pass
    except Exception as err:  # noqa: BLE001 - safetensors raises its own error type for a bad header
        raise CheckpointError(f"{weights}: unreadable ({err})") from None


def log_dir_of(cfg: Any) -> str:
    """A job's log dir (``runner.logger.log_path/experiment_name``), absolute."""
    return os.path.abspath(os.path.join(cfg.runner.logger.log_path, cfg.runner.logger.experiment_name))


def step_dir(log_dir: str, step: int) -> str:
    return os.path.join(log_dir, "checkpoints", f"global_step_{step}")


def named_step(directory: str) -> int | None:
    """N of a directory named ``global_step_N`` (as ``step_dir`` names them); None for any other name."""
    named = re.fullmatch(r"global_step_(\d+)", os.path.basename(os.path.normpath(directory)))
    return int(named.group(1)) if named else None


def checkpoint_step(directory: str) -> int:
    """The training step of a checkpoint: from its name, else from its runner state (a renamed copy)."""
    step = named_step(directory)
    if step is not None:
        return step
    return int(torch.load(os.path.join(directory, RUNNER_STATE), weights_only=True)["global_step"])


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
