"""What every Ray worker shares: thread count, device, seeding and RNG state for exact resume."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from toolkits.base.seeding import get_rng_state, seed_everything, set_rng_state

COMPONENT_SEED_OFFSET = {"env": 10_000, "rollout": 20_000, "actor": 30_000}


class Worker:
    """Base of the env, rollout and actor workers (each one Ray actor process)."""

    component = "worker"

    def __init__(self, rank: int, world_size: int, num_cpus: float, seed: int):
        self.rank = rank
        self.world_size = world_size
        torch.set_num_threads(max(1, int(num_cpus)))
        os.environ.setdefault("MUJOCO_GL", "egl")
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        seed_everything(seed + COMPONENT_SEED_OFFSET.get(self.component, 0) + rank)
        self._busy: list[tuple[float, float]] = []

    def where(self) -> dict[str, Any]:
        """The Ray node this worker runs on and the devices it sees (the run's placement.json)."""
        import ray

        ctx = ray.get_runtime_context()
        return {"node_id": ctx.get_node_id(), "node_ip": ray.util.get_node_ip_address(),
                "gpu_ids": [str(g) for g in ctx.get_accelerator_ids().get("GPU", [])]}  # fmt: skip

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Record a wall-clock interval of model or env compute (for the overhead metrics)."""
        t0 = time.time()
        try:
            yield
        finally:
            self._busy.append((t0, time.time()))

    def pop_busy(self) -> list[tuple[float, float]]:
        """Compute intervals since the last call."""
        out, self._busy = self._busy, []
        return out

    def build_policy(self, cfg: Any, spec: Any) -> Any:
        """The job's policy with the same initial weights in every worker (seeded by ``runner.seed``);
        afterwards this worker's own random stream continues from its own seed. A ``Pending`` spec is
        waited for after the policy's modules are imported (they take seconds; the env builds meanwhile)."""
        from policy_and_value.models.registry import import_policy, make_policy
        from policy_and_value.runtime.worker_group import Pending

        import_policy(cfg.model.policy_type)
        if isinstance(spec, Pending):
            spec = spec.get()
        torch.manual_seed(cfg.runner.seed)
        policy = make_policy(
            cfg.model,
            spec,
            logprob_type=cfg.algorithm.logprob_type,
            value_per_action=cfg.algorithm.reward_type == "action_level",
            model_dir=cfg.rollout.model_dir,
        ).to(self.device)
        torch.manual_seed(cfg.runner.seed + COMPONENT_SEED_OFFSET.get(self.component, 0) + self.rank)
        return policy

    def init_weight_sync(self, host: str, port: int, rank: int, world_size: int) -> None:
        """Join the weight-sync group (actor rank 0 is its rank 0, rollout ranks follow): see
        ``runtime/weight_sync.py``."""
        from policy_and_value.runtime.weight_sync import WeightChannel

        self.weight_channel = WeightChannel(host, port, rank, world_size)

    def ping(self) -> int:
        """Round-trip check used at start-up."""
        return self.rank

    def get_rng_state(self) -> dict[str, Any]:
        return get_rng_state()

    def set_rng_state(self, state: dict[str, Any]) -> None:
        set_rng_state(state)
