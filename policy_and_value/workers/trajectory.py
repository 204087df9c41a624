"""Time-major trajectory shards: what the rollout worker records and the actor trains on.

A shard is a dict of tensors shaped [T, B, ...] (``values`` is [T+1, B, ...]: the last row bootstraps),
plus ``obs`` (a dict in the same layout; ``prompt`` is a numpy object array [T, B]) and ``replay``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from policy_and_value.envs.base import Observation


def obs_index(obs: Observation, idx: Any) -> Observation:
    """Select envs (dim 0) of a batched observation, prompts included."""
    out: Observation = {}
    for k, v in obs.items():
        if isinstance(v, torch.Tensor):
            out[k] = v[idx]
        elif isinstance(v, np.ndarray):
            out[k] = v[idx]
        elif isinstance(v, list):
            arr = np.empty(len(v), dtype=object)
            arr[:] = v
            sel = arr[idx.numpy() if isinstance(idx, torch.Tensor) else idx]
            out[k] = list(sel) if isinstance(sel, np.ndarray) else [sel]
        else:
            out[k] = v
    return out


def obs_stack(items: list[Observation]) -> Observation:
    """Stack per-step observations into [T, B, ...] (prompts into a numpy object array)."""
    out: Observation = {}
    for k in items[0]:
        vals = [o[k] for o in items]
        if isinstance(vals[0], torch.Tensor):
            out[k] = torch.stack(vals)
        else:
            arr = np.empty((len(vals), len(vals[0])), dtype=object)
            for t, v in enumerate(vals):
                arr[t, :] = list(v)
            out[k] = arr
    return out


def _map(x: Any, fn_tensor, fn_array) -> Any:
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        return fn_tensor(x)
    if isinstance(x, np.ndarray):
        return fn_array(x)
    if isinstance(x, dict):
        return {k: _map(v, fn_tensor, fn_array) for k, v in x.items()}
    raise TypeError(f"unexpected trajectory entry of type {type(x).__name__}")


def shard_columns(shard: dict[str, Any], start: int, end: int) -> dict[str, Any]:
    """Envs ``start:end`` (dim 1) of a shard."""
    return {
        k: _map(v, lambda t: t[:, start:end].clone(), lambda a: a[:, start:end].copy())
        for k, v in shard.items()
    }


def cat_shards(shards: list[dict[str, Any]]) -> dict[str, Any]:
    """Concatenate shards along the env dimension (dim 1)."""
    if len(shards) == 1:
        return shards[0]

    def cat(values: list[Any]) -> Any:
        first = values[0]
        if first is None:
            return None
        if isinstance(first, torch.Tensor):
            return torch.cat(values, dim=1)
        if isinstance(first, np.ndarray):
            return np.concatenate(values, axis=1)
        return {k: cat([v[k] for v in values]) for k in first}

    return {k: cat([s[k] for s in shards]) for k in shards[0]}


def flatten_time(x: Any, length: int) -> Any:
    """[T, B, ...] -> [T*B, ...] for every tensor/array in x (only the first ``length`` rows)."""
    return _map(
        x,
        lambda t: t[:length].reshape(-1, *t.shape[2:]),
        lambda a: a[:length].reshape(-1, *a.shape[2:]),
    )


def take(x: Any, idx: torch.Tensor) -> Any:
    """Rows ``idx`` of flattened samples; prompts come back as a list[str]."""

    def take_array(a: np.ndarray) -> Any:
        sel = a[idx.numpy()]
        return list(sel) if sel.dtype == object else sel

    return _map(x, lambda t: t[idx], take_array)
