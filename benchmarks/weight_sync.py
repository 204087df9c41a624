"""Weight sync of a large state dict from one Ray worker to others: Ray's object store against the
weight-sync group (``rollout.weight_sync``), in the Ray cluster a job starts (object store of 512 MiB).

    .venv/bin/python benchmarks/weight_sync.py [--gib 1 2] [--receivers 2] [--repeats 3]

A synthetic state dict of ``--gib`` GiB (float32 tensors of 16 MiB, as a model's layers) lives in one
"actor" worker; each repeat sends it to ``--receivers`` "rollout" workers, which copy it into their own
tensors of the same layout (what ``set_weights`` does). Prints the median seconds per sync and GiB/s.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ray
import torch

from policy_and_value.runtime.weight_sync import WeightChannel, layout_of

TENSOR_NUMEL = 4 * 1024**2  # 16 MiB of float32


def state(gib: float) -> list[torch.Tensor]:
    n = max(1, int(gib * 1024**3 / (TENSOR_NUMEL * 4)))
    return [torch.full((TENSOR_NUMEL,), float(i)) for i in range(n)]


@ray.remote(num_cpus=0)
class Holder:
    """A worker holding a state dict (the actor's, or a rollout's to overwrite)."""

    def __init__(self, gib: float):
        torch.set_num_threads(1)
        self.tensors = state(gib)
        self.channel: WeightChannel | None = None

    def address(self) -> tuple[str, int]:
        import socket

        with socket.socket() as s:
            s.bind(("", 0))
            return ray.util.get_node_ip_address(), s.getsockname()[1]

    def join(self, host: str, port: int, rank: int, size: int) -> None:
        self.channel = WeightChannel(host, port, rank, size)

    def get(self) -> dict[str, torch.Tensor]:
        return {str(i): t.clone() for i, t in enumerate(self.tensors)}  # what ActorWorker.get_weights does

    def set(self, weights: dict[str, torch.Tensor]) -> float:
        for i, t in enumerate(self.tensors):
            t.copy_(weights[str(i)])
        return float(self.tensors[-1][0])

    def send(self) -> None:
        self.channel.send(self.tensors)

    def receive(self) -> float:
        for t, r in zip(self.tensors, self.channel.receive(layout_of(self.tensors)), strict=True):
            t.copy_(r)
        return float(self.tensors[-1][0])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=float, nargs="+", default=[1.0, 2.0])
    p.add_argument("--receivers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    ray.init(address="local", object_store_memory=512 * 1024**2, include_dashboard=False, log_to_driver=False)
    print("| state dict | receivers | object store | weight-sync group |\n|---|---|---|---|")
    for gib in args.gib:
        actor = Holder.remote(gib)
        rollouts = [Holder.remote(gib) for _ in range(args.receivers)]
        host, port = ray.get(actor.address.remote())
        size = 1 + args.receivers
        ray.get([actor.join.remote(host, port, 0, size)]
                + [r.join.remote(host, port, 1 + i, size) for i, r in enumerate(rollouts)])  # fmt: skip
        times: dict[str, list[float]] = {"object store": [], "group": []}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            ref = actor.get.remote()
            ray.get([r.set.remote(ref) for r in rollouts])
            del ref
            times["object store"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ray.get([actor.send.remote(), *[r.receive.remote() for r in rollouts]])
            times["group"].append(time.perf_counter() - t0)
        cells = [
            f"{statistics.median(v):.2f} s ({gib / statistics.median(v):.2f} GiB/s)" for v in times.values()
        ]
        print(f"| {gib:g} GiB | {args.receivers} | {cells[0]} | {cells[1]} |", flush=True)
        for h in (actor, *rollouts):
            ray.kill(h)
    ray.shutdown()


if __name__ == "__main__":
    main()
