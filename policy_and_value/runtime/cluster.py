"""Ray cluster start-up and one placement group per node whose bundles are the devices.

Devices are GPUs when the nodes have them, else CPU slots (``cluster.num_devices_per_node`` per node,
each a bundle with an equal share of the node's CPUs). Every worker is scheduled into the bundle of
its device, so Ray accounts for every device and sets ``CUDA_VISIBLE_DEVICES`` itself. With several
nodes (``RAY_ADDRESS`` names a running cluster) node i of the placement grammar is the i-th node, head
first: its placement group is pinned there by Ray's ``ray.io/node-id`` label, so devices ``i * per_node
...`` are on that machine. Start-up waits up to ``cluster.node_timeout_s`` for the nodes to join.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from dataclasses import dataclass

import ray
from ray.util.placement_group import (
    NODE_ID_LABEL_KEY,
    PlacementGroup,
    placement_group,
    remove_placement_group,
)

from policy_and_value.config.schema import ClusterConfig

log = logging.getLogger(__name__)


@dataclass
class Cluster:
    """A started Ray cluster with per-node placement groups; ``shutdown`` undoes ``start``."""

    num_nodes: int
    devices_per_node: int
    use_gpu: bool
    cpus_per_device: float
    placement_groups: list[PlacementGroup]
    started_ray: bool

    @classmethod
    def start(cls, cfg: ClusterConfig, object_store_memory: int = 512 * 1024**2) -> Cluster:
        """Join ``RAY_ADDRESS`` when set, else start a local cluster sized to this machine."""
        started = not ray.is_initialized()
        if started:
            init_ray(object_store_memory)
        else:
            set_ray_environment()
        nodes = wait_for_nodes(cfg.num_nodes, cfg.node_timeout_s if os.environ.get("RAY_ADDRESS") else 0.0)
        gpus = min(int(n["Resources"].get("GPU", 0)) for n in nodes)
        cpus = min(float(n["Resources"].get("CPU", 1)) for n in nodes)
        use_gpu = gpus > 0
        devices = gpus if use_gpu else cfg.num_devices_per_node
        cpus_per_device = cpus / devices
        bundle = {"CPU": cpus_per_device, **({"GPU": 1.0} if use_gpu else {})}
        pgs = []
        for node in nodes[: cfg.num_nodes]:
            pin = [{NODE_ID_LABEL_KEY: node["NodeID"]}] * devices if cfg.num_nodes > 1 else None
            pgs.append(
                placement_group(
                    [dict(bundle) for _ in range(devices)], "STRICT_PACK", bundle_label_selector=pin
                )
            )
        ray.get([pg.ready() for pg in pgs], timeout=120)
        return cls(cfg.num_nodes, devices, use_gpu, cpus_per_device, pgs, started)

    def node_ids(self) -> list[str]:
        """The Ray node id of each placement node, in placement order."""
        return [ray.util.placement_group_table(pg)["bundles_to_node_id"][0] for pg in self.placement_groups]

    def shutdown(self) -> None:
        """Remove the placement groups and stop Ray if this process started it."""
        for pg in self.placement_groups:
            try:
                remove_placement_group(pg)
            except Exception:  # noqa: BLE001 - best effort during teardown
                pass
        self.placement_groups = []
        if self.started_ray and ray.is_initialized():
            ray.shutdown()
            reinstall_sigterm_handler()


def reinstall_sigterm_handler() -> None:
    """Install Python's SIGTERM handler again after ``ray.shutdown``: it resets the process's SIGTERM action to
    the default (terminate) underneath Python, whose ``signal.getsignal`` still names a handler that is then
    never called, so a co-evolution stopped between its rounds' jobs died at once instead of after the round.
    Ray's own handler (from ``ray.init``, nobody took it back) gives way to the default."""
    if threading.current_thread() is not threading.main_thread():
        return
    handler = signal.getsignal(signal.SIGTERM)
    if handler is None or getattr(handler, "__module__", "").startswith("ray."):
        handler = signal.SIG_DFL
    signal.signal(signal.SIGTERM, handler)


def set_ray_environment() -> None:
    """Environment defaults the job's processes need, set before Ray starts (its workers inherit them)."""
    # workers' output (and a failed worker's traceback) stays in Ray's session logs: a failure reaches
    # the user as one line (runner/failure.py) with the traceback in <log_dir>/error.log; errors of
    # calls the runner never waited for, because another one failed first, are not printed either
    os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
    # a local cluster's workers inherit this process's environment (a runtime_env would carry it too,
    # at a second more per worker start)
    os.environ.setdefault("MUJOCO_GL", "egl")


def init_ray(object_store_memory: int = 512 * 1024**2) -> None:
    """Join ``RAY_ADDRESS`` when set, else start a new local Ray sized to this machine (the one call
    ``Cluster.start`` makes when this process has no Ray yet; tests start one that jobs then share)."""
    set_ray_environment()
    if os.environ.get("RAY_ADDRESS"):
        ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
    else:
        ray.init(
            address="local",  # a new cluster here, never one a `ray start` left in /tmp/ray
            num_cpus=os.cpu_count() or 1,
            object_store_memory=object_store_memory,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )


def wait_for_nodes(num_nodes: int, timeout_s: float) -> list[dict]:
    """The alive Ray nodes, head first then by node id, once at least ``num_nodes`` are up; after
    ``timeout_s`` seconds without them, one error line saying how many joined and how to add the rest."""
    deadline = time.monotonic() + timeout_s
    while True:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if len(nodes) >= num_nodes:
            return sorted(nodes, key=lambda n: ("node:__internal_head__" not in n["Resources"], n["NodeID"]))
        if time.monotonic() >= deadline:
            raise RuntimeError(
                f"cluster.num_nodes={num_nodes}: only {len(nodes)} Ray node(s) joined within {timeout_s:.0f} s; "
                "join the others with `bash scripts/run_embodiment_ray_unified_multi_task.sh --address HEAD:PORT` "
                "(or `ray start --address=HEAD:PORT`) on each machine"
            )
        time.sleep(1.0)
