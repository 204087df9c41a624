"""Validate a composed config: schema (types, ranges, unknown keys) then cross-field checks, each part of
the config by its own module (``env_checks``, ``algorithm_checks``, ``model_checks``, ``sizes``,
``data_checks``).

Every failure is one line ``config error: <key>=<value>: <what is allowed>`` raised as ``ConfigError``
before anything heavy (Ray, models, simulators) starts.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from pydantic import ValidationError

from policy_and_value.config.algorithm_checks import check_algorithm, check_batches
from policy_and_value.config.data_checks import (
    check_backends,
    check_offline_data,
    check_paths,
)
from policy_and_value.config.env_checks import all_envs, apply_num_group_envs, check_envs
from policy_and_value.config.model_checks import check_pi0
from policy_and_value.config.schema import JobConfig
from policy_and_value.config.setting_checks import check_setting
from policy_and_value.config.sizes import check_sizes
from policy_and_value.runtime.placement import PlacementError, parse_placement
from toolkits.base.errors import ConfigError, config_error, format_validation_error


def validate_config(data: dict[str, Any], num_devices: int | None = None) -> JobConfig:
    """Schema + cross checks; ``num_devices`` per node defaults to the GPU count, else CPU slots."""
    try:
        cfg = JobConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, data, JobConfig)) from None
    if num_devices is None:
        num_devices = devices_per_node(cfg)
    try:
        placement = parse_placement(cfg.cluster.component_placement, cfg.cluster.num_nodes, num_devices)
    except PlacementError as err:
        raise ConfigError(str(err)) from None
    if cfg.cluster.num_nodes > 1 and not os.environ.get("RAY_ADDRESS"):
        raise config_error(
            "cluster.num_nodes", cfg.cluster.num_nodes,
            "several nodes need a running Ray cluster: start the job with "
            "scripts/run_embodiment_ray_unified_multi_task.sh --head (or set RAY_ADDRESS)",
        )  # fmt: skip
    if cfg.rollout.overlap_training:
        shared = sorted(
            {s.global_device for s in placement.slots["rollout"]}
            & {s.global_device for s in placement.slots["actor"]}
        )
        if shared:
            raise config_error(
                "rollout.overlap_training", True,
                f"needs rollout and actor on separate devices; they share device {shared[0]} "
                "(e.g. cluster=separate)",
            )  # fmt: skip
    ranks = {c: placement.world_size(c) for c in ("env", "rollout", "actor")}
    cfg = apply_num_group_envs(cfg, ranks)
    check_envs(cfg, ranks)
    check_setting(cfg)
    check_batches(cfg, ranks)
    check_algorithm(cfg)
    check_paths(cfg)
    check_pi0(cfg)
    check_sizes(cfg, all_envs(cfg))
    check_offline_data(cfg)
    check_backends(cfg)
    return cfg


def devices_per_node(cfg: JobConfig) -> int:
    """The devices the placement grammar counts on each node: this machine's GPUs, else the config's CPU slots."""
    return _visible_gpus() or cfg.cluster.num_devices_per_node


def _visible_gpus() -> int:
    if importlib.util.find_spec("torch") is None:
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
