"""Mismatches between a policy directory and what it will be driven with, caught at export, publish and serve: its
normalisation statistics (missing, of the wrong size, not finite, or of other actions than its action space) and the
cameras a server is told against those it was trained with. Each is one phrase naming what differs; nothing is ever
sliced or replaced by the identity in silence."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

RANGE_SLACK = 0.1  # action statistics may reach this fraction of the action space's width beyond its bounds


def norm_stats_problem(
    stats: dict[str, Any] | None,
    norm_mode: str,
    state_dim: int,
    action_dim: int,
    action_low: list[float] | None = None,
    action_high: list[float] | None = None,
    trained_without: bool = False,
) -> str | None:
    """Why ``stats`` (key -> ``Stats``) cannot normalise this policy's state and actions, or None. ``norm_mode``
    "none", or a policy trained without any (``trained_without``: export records it in deploy.json), needs none;
    otherwise both keys must be there, with ``state_dim`` / ``action_dim`` finite numbers each, and the actions'
    q01 / q99 inside the action space (widened by ``RANGE_SLACK``) when its bounds are known."""
    if norm_mode == "none" or (trained_without and not stats):
        return None
    stats = stats or {}
    missing = [key for key in ("state", "actions") if key not in stats]
    if missing:
        return (
            f"norm_stats.json has no {' and no '.join(missing)} statistics (norm_mode {norm_mode}): the policy "
            "would read raw values as normalised ones"
        )
    for key, dim in (("state", state_dim), ("actions", action_dim)):
        s = stats[key]
        for name in ("mean", "std", "q01", "q99"):
            values = [float(v) for v in getattr(s, name).reshape(-1).tolist()]
            if len(values) != dim:
                return (
                    f"norm_stats.json: {key} {name} has {len(values)} numbers, the policy's {key} has {dim}"
                )
            if not all(math.isfinite(v) for v in values):
                return f"norm_stats.json: {key} {name} holds NaN or infinite values"
    if action_low is not None and action_high is not None:
        q01, q99 = stats["actions"].q01.tolist(), stats["actions"].q99.tolist()
        for i, (lo, hi, low, high) in enumerate(zip(q01, q99, action_low, action_high, strict=True)):
            slack = RANGE_SLACK * (high - low)
            if lo < low - slack or hi > high + slack:
                return (
                    f"norm_stats.json: actions[{i}] span [{lo:.3g}, {hi:.3g}] (q01, q99) but the action space is "
                    f"[{low:.3g}, {high:.3g}]: statistics of other actions"
                )
    return None


def policy_dir_deploy_problem(directory: str | Path, cameras: list[str] | None = None) -> str | None:
    """``norm_stats_problem`` for a policy directory's files (``config.json``, ``deploy.json``,
    ``norm_stats.json``), and ``cameras`` (a server's ``--cameras``) against its ``deploy.json``; None when fine."""
    from policy_and_value.models.pi0 import Pi0Config, load_norm_stats
    from toolkits.deploy.spec import DEPLOY_FILE

    directory = Path(directory)
    cfg = Pi0Config.load(directory / "config.json")
    deploy = json.loads((directory / DEPLOY_FILE).read_text()) if (directory / DEPLOY_FILE).is_file() else {}
    if cameras and deploy.get("cameras") and list(cameras) != deploy["cameras"]:
        return (
            f"--cameras {' '.join(cameras)}: the policy was trained with {deploy['cameras']} ({DEPLOY_FILE})"
        )
    path = directory / "norm_stats.json"
    try:
        stats = load_norm_stats(path) if path.is_file() else None
    except (ValueError, KeyError, TypeError) as err:
        return f"norm_stats.json is unreadable ({' '.join(str(err).split())})"
    trained_without = deploy.get("source", {}).get("norm_stats") is False
    return norm_stats_problem(
        stats, cfg.norm_mode, cfg.state_dim, cfg.action_dim, deploy.get("action_low"), deploy.get("action_high"),
        trained_without,
    )  # fmt: skip
