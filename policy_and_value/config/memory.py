"""Memory estimate of a job before it starts: what each process holds for the models it builds.

The models are built on PyTorch's ``meta`` device (shapes only, no memory, no weights read), so the numbers
come from the real modules of the job's config: parameters in their dtype; the actor adds a gradient and
AdamW's two moments (kept in the parameter's dtype) for every trainable parameter, on every actor rank
(gradients are all-reduced with DDP), the moments split over the actor ranks with ``actor.shard_optimizer``. Activations are not included: they depend on
the micro batch, image size and gradient checkpointing (measured peaks: benchmarks/README.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from policy_and_value.config.schema import JobConfig

GIB = 1024**3


@dataclass(frozen=True)
class ProcessMemory:
    """GiB one process holds for its models (``parts`` names what the total is made of)."""

    component: str
    total_gib: float
    parts: str


def is_published_size(cfg: JobConfig) -> bool:
    """A pi0/pi05 preset of the published size (not a ``tiny`` preset): a job worth estimating at start."""
    if cfg.model.policy_type not in ("pi0", "pi05"):
        return False
    return not str(cfg.model.pi0.get("preset", "tiny")).startswith("tiny")


def estimate_memory(cfg: JobConfig, actor_ranks: int = 1) -> list[ProcessMemory]:
    """Model memory of one actor rank, one rollout rank and one env rank (world-model envs) of ``cfg``;
    with ``actor.shard_optimizer`` the AdamW moments are split over ``actor_ranks``."""
    import torch

    from policy_and_value.config.sizes import env_sizes
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.models.registry import make_policy

    train = cfg.env.train
    action_dim, state_dim = env_sizes(train) or (cfg.model.action_dim or 4, 39)
    spec = EnvSpec(
        action_dim=cfg.model.action_dim or action_dim,
        num_action_chunks=cfg.model.num_action_chunks or train.num_action_chunks,
        state_dim=state_dim,
        image_shape=(len(train.cameras), train.image_size, train.image_size) if train.use_images else None,
        tasks=tuple(train.tasks),
    )
    with torch.device("meta"):
        policy = make_policy(
            cfg.model, spec, logprob_type=cfg.algorithm.logprob_type,
            value_per_action=cfg.algorithm.reward_type == "action_level",
        )  # fmt: skip
    params = list(policy.parameters())
    weights = sum(p.numel() * p.element_size() for p in params) / GIB
    trainable = sum(p.numel() * p.element_size() for p in params if p.requires_grad) / GIB
    n = sum(p.numel() for p in params) / 1e6
    n_train = sum(p.numel() for p in params if p.requires_grad) / 1e6
    shards = actor_ranks if cfg.actor.shard_optimizer else 1
    moments = 2 * trainable / shards
    sharded = f" (moments split over {shards} ranks)" if shards > 1 else ""
    out = [
        ProcessMemory(
            "actor", weights + trainable + moments,
            f"{n:,.0f}M parameters {weights:.1f} GiB + gradients and AdamW moments of {n_train:,.0f}M trainable "
            f"{trainable + moments:.1f} GiB{sharded}",
        ),
        ProcessMemory("rollout", weights, f"{n:,.0f}M parameters {weights:.1f} GiB"),
    ]  # fmt: skip
    world_model = _world_model_gib(cfg)
    if world_model is not None:
        out.append(ProcessMemory("env", world_model[0], world_model[1]))
    return out


def _world_model_gib(cfg: JobConfig) -> tuple[float, str] | None:
    """The dynamics model of the training envs, in the dtype the env runs it in."""
    path = cfg.env.train.dynamics_model_config
    if cfg.env.train.env_type != "world_model" or path is None:
        return None
    import torch

    from world_models.dynamics_config import DynamicsModelConfig
    from world_models.dynamics_model import DynamicsModel

    wm_cfg = DynamicsModelConfig.load(os.path.join(path, "config.json"))
    with torch.device("meta"):
        model = DynamicsModel(wm_cfg)
    dtype = cfg.env.train.dynamics_model_dtype or wm_cfg.dtype
    size = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    n = sum(p.numel() for p in model.parameters())
    gib = n * size / GIB
    return gib, f"dynamics model {n / 1e6:,.0f}M parameters in {dtype} {gib:.1f} GiB"


def memory_report(cfg: JobConfig) -> str:
    """A few lines for the terminal, printed before Ray starts: each process, then each device's total
    under ``cluster.component_placement`` (devices counted as validation counts them)."""
    from policy_and_value.config.validate import devices_per_node
    from policy_and_value.runtime.placement import parse_placement

    placement = parse_placement(cfg.cluster.component_placement, cfg.cluster.num_nodes, devices_per_node(cfg))
    estimates = estimate_memory(cfg, placement.world_size("actor"))
    lines = ["model memory per process (activations not included):"]
    lines += [f"  {p.component:8s} {p.total_gib:7.1f} GiB  ({p.parts})" for p in estimates]
    per_process = {p.component: p.total_gib for p in estimates}
    devices: dict[int, list[str]] = {}
    for component, slots in placement.slots.items():
        for slot in slots:
            devices.setdefault(slot.global_device, []).append(component)
    for dev, components in sorted(devices.items()):
        total = sum(per_process.get(c, 0.0) for c in components)
        lines.append(f"  device {dev}: {total:.1f} GiB ({' + '.join(components)})")
    return "\n".join(lines)
