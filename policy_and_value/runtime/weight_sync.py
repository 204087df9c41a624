"""Weight sync from actor rank 0 to the rollout ranks over a process group of their own, not through Ray's
object store (``rollout.weight_sync: collective``, the default).

The object store is sized for rollouts (512 MiB by default), so a multi-GB state dict would spill to disk
on every sync, and between nodes it is copied object by object. Here actor rank 0 (rank 0 of the channel)
and every rollout rank (ranks 1..R) form a gloo group over TCP, outside the actor's own process group
(which only actor ranks join); the weights go as a few flat buckets per dtype. Both sides derive the same
buckets from the state dict's layout, which is checked first so a mismatch is one clear error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import timedelta

import torch
import torch.distributed as dist

BUCKET_BYTES = 256 * 1024**2
Layout = list[tuple[tuple[int, ...], torch.dtype]]


def layout_of(tensors: Sequence[torch.Tensor]) -> Layout:
    """Shape and dtype of each tensor: what both sides of a sync must agree on."""
    return [(tuple(t.shape), t.dtype) for t in tensors]


def bucket_plan(layout: Layout, bucket_bytes: int = BUCKET_BYTES) -> list[list[int]]:
    """Indices of consecutive tensors of one dtype, grouped up to ``bucket_bytes`` (a larger tensor is a
    bucket of its own)."""
    buckets: list[list[int]] = []
    size = 0
    for i, (shape, dtype) in enumerate(layout):
        nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
        last = buckets[-1] if buckets else None
        if last is None or layout[last[0]][1] != dtype or size + nbytes > bucket_bytes:
            buckets.append([i])
            size = nbytes
        else:
            last.append(i)
            size += nbytes
    return buckets


def _fingerprint(layout: Layout) -> torch.Tensor:
    digest = hashlib.sha256(repr([(s, str(d)) for s, d in layout]).encode()).digest()
    return torch.tensor([int.from_bytes(digest[:7], "little"), len(layout)], dtype=torch.int64)


class WeightChannel:
    """One end of the sync group: rank 0 sends, the other ranks receive."""

    def __init__(self, host: str, port: int, rank: int, world_size: int, timeout_s: float = 300.0):
        timeout = timedelta(seconds=timeout_s)
        store = dist.TCPStore(host, port, world_size, is_master=rank == 0, timeout=timeout)
        self.group = dist.ProcessGroupGloo(store, rank, world_size, timeout)
        self.rank = rank

    def send(self, tensors: Sequence[torch.Tensor]) -> None:
        """Rank 0: broadcast ``tensors`` (any device; sent from CPU)."""
        layout = layout_of(tensors)
        self.group.broadcast(_fingerprint(layout), 0).wait()
        if self._any_mismatch(False):
            raise RuntimeError(
                "weight sync: a rollout rank's policy has another state dict layout than the actor's"
            )
        for idx in bucket_plan(layout):
            flat = torch.cat([tensors[i].detach().reshape(-1).cpu() for i in idx])
            self.group.broadcast(flat, 0).wait()

    def _any_mismatch(self, mine: bool) -> bool:
        """Every rank learns whether any receiver's layout differs, so all of them stop, none waits."""
        flag = torch.tensor([int(mine)], dtype=torch.int64)
        opts = dist.AllreduceOptions()
        opts.reduceOp = dist.ReduceOp.MAX
        self.group.allreduce([flag], opts).wait()
        return bool(flag.item())

    def receive(self, layout: Layout) -> list[torch.Tensor]:
        """Ranks > 0: the tensors rank 0 sent, on CPU, given the layout this side expects."""
        fingerprint = torch.zeros(2, dtype=torch.int64)
        self.group.broadcast(fingerprint, 0).wait()
        if self._any_mismatch(not torch.equal(fingerprint, _fingerprint(layout))):
            raise RuntimeError(
                f"weight sync: the actor's state dict ({int(fingerprint[1])} tensors) does not match this "
                f"rollout rank's ({len(layout)} tensors, or other shapes/dtypes): both must build the same policy"
            )
        out: list[torch.Tensor | None] = [None] * len(layout)
        for idx in bucket_plan(layout):
            sizes = [torch.Size(layout[i][0]).numel() for i in idx]
            flat = torch.empty(sum(sizes), dtype=layout[idx[0]][1])
            self.group.broadcast(flat, 0).wait()
            for i, part in zip(idx, flat.split(sizes), strict=True):
                out[i] = part.view(layout[i][0])
        return out  # type: ignore[return-value]
