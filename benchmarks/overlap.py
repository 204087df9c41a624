"""Rollout/training overlap: mean step time with ``rollout.overlap_training`` against the serial loop, same
job, separate placement (rollout and actor on their own devices), measured in one run.

    .venv/bin/python benchmarks/overlap.py [--config ppo_metaworld] [--steps 8] [key=value ...]

Steps 2..N are timed (the first pays start-up and is never overlapped); no checkpoints or evaluations,
so every step but the last generates the next batch while the actor trains. Prints both means and the
ratio overlapped / serial (the target is <= 0.7).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from policy_and_value.config import load_config
from policy_and_value.runner import run_job


def mean_step_time(config: str, overrides: list[str], overlap: bool, steps: int, root: str) -> float:
    """Mean ``time/step`` of steps 2..``steps`` of one run."""
    name = "overlap" if overlap else "serial"
    cfg = load_config(config, [
        *overrides, "cluster=separate", f"rollout.overlap_training={str(overlap).lower()}",
        f"runner.max_steps={steps}", "runner.save_interval=-1", "runner.val_check_interval=-1",
        "runner.progress_bar=false", f"runner.logger.log_path={root}", f"runner.logger.experiment_name={name}",
    ])  # fmt: skip
    run_job(cfg)
    rows = [json.loads(x) for x in (Path(root) / name / "metrics.jsonl").read_text().splitlines()]
    times = [r["time/step"] for r in rows[1:]]
    return sum(times) / len(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="ppo_metaworld")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("overrides", nargs="*")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as root:
        serial = mean_step_time(args.config, args.overrides, False, args.steps, root)
        overlapped = mean_step_time(args.config, args.overrides, True, args.steps, root)
    print(f"\n| {args.config} (separate placement) | mean step time, steps 2-{args.steps} |\n|---|---|")
    print(f"| serial | {serial:.2f} s |\n| overlapped | {overlapped:.2f} s |")
    print(f"\noverlapped / serial = {overlapped / serial:.2f} (target <= 0.7)")


if __name__ == "__main__":
    main()
