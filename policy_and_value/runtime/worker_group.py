"""A group of Ray actors, one per rank of a component, each pinned to the bundle of its device."""

from __future__ import annotations

from typing import Any

import ray
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from policy_and_value.runtime.cluster import Cluster
from policy_and_value.runtime.placement import Placement, ProcessSlot


class Pending:
    """A result another worker is still computing, handed to a worker's constructor unresolved (Ray resolves
    only top-level ``ObjectRef`` arguments), so the constructor can import and prepare before it waits."""

    def __init__(self, ref: ray.ObjectRef):
        self.ref = ref

    def get(self) -> Any:
        return ray.get(self.ref)


class WorkerGroup:
    """Ranks of one component (env, rollout or actor) as Ray actors placed by the placement grammar.

    A device shared by k processes gives each 1/k of its bundle (CPU share, GPU fraction), so sharing,
    partial sharing and separation are all expressed in Ray's own resource accounting.
    """

    def __init__(
        self, worker_cls: type, component: str, placement: Placement, cluster: Cluster, **kwargs: Any
    ):
        self.component = component
        self.slots: list[ProcessSlot] = placement.slots[component]
        remote_cls = ray.remote(worker_cls)
        self.workers = []
        for slot in self.slots:
            share = placement.processes_on_device(slot.global_device)
            options: dict[str, Any] = {
                "num_cpus": cluster.cpus_per_device / share,
                "num_gpus": (1.0 / share) if cluster.use_gpu else 0,
                "scheduling_strategy": PlacementGroupSchedulingStrategy(
                    placement_group=cluster.placement_groups[slot.node],
                    placement_group_bundle_index=slot.local_device,
                ),
                "name": f"{component}_{slot.rank}",
                "max_concurrency": 1,
            }
            worker = remote_cls.options(**options).remote(
                rank=slot.rank,
                world_size=slot.world_size,
                num_cpus=cluster.cpus_per_device / share,
                **kwargs,
            )
            self.workers.append(worker)

    @property
    def world_size(self) -> int:
        return len(self.workers)

    def call(self, method: str, *args: Any, **kwargs: Any) -> list[ray.ObjectRef]:
        """Call ``method`` with the same arguments on every rank; returns one ref per rank."""
        return [getattr(w, method).remote(*args, **kwargs) for w in self.workers]

    def call_each(self, method: str, per_rank_args: list[tuple]) -> list[ray.ObjectRef]:
        """Call ``method`` on every rank with that rank's own positional arguments."""
        return [getattr(w, method).remote(*a) for w, a in zip(self.workers, per_rank_args, strict=True)]

    def get(self, method: str, *args: Any, **kwargs: Any) -> list[Any]:
        """``call`` and wait for the results."""
        return ray.get(self.call(method, *args, **kwargs))

    def kill(self) -> None:
        """Terminate every actor of the group (used on shutdown and after errors)."""
        for w in self.workers:
            try:
                ray.kill(w, no_restart=True)
            except Exception:  # noqa: BLE001 - actor may already be gone
                pass
        self.workers = []
