"""Rollout/training overlap: mean step time with ``rollout.overlap_training`` against the serial loop, same
job, separate placement (rollout and actor on their own devices), measured in one run.

    .venv/bin/python benchmarks/overlap.py [--config ppo_cnn_metaworld] [--steps 8] [key=value ...]

Steps 2..N are timed (the first pays start-up and is never overlapped); no checkpoints or evaluations,
so every step but the last generates the next batch while the actor trains. Prints both means and the
ratio overlapped / serial (the target is <= 0.7).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from policy_and_value.config import load_config
from policy_and_value.runner import run_job


def mean_times(config: str, overrides: list[str], overlap: bool, steps: int, root: str) -> dict[str, float]:
    """Mean ``time/step``, ``time/generate_rollouts`` and ``time/actor_training`` of steps 2..``steps``."""
    name = "overlap" if overlap else "serial"
    cfg = load_config(config, [
        *overrides, "cluster=separate", f"rollout.overlap_training={str(overlap).lower()}",
        f"runner.max_steps={steps}", "runner.save_interval=-1", "runner.val_check_interval=-1",
        "runner.progress_bar=false", f"runner.logger.log_path={root}", f"runner.logger.experiment_name={name}",
    ])  # fmt: skip
    run_job(cfg)
    rows = [json.loads(x) for x in (Path(root) / name / "metrics.jsonl").read_text().splitlines()][1:]
    keys = ("time/step", "time/generate_rollouts", "time/actor_training", "time/overlapped_generation")
    return {k: sum(r.get(k, 0.0) for r in rows) / len(rows) for k in keys}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="ppo_cnn_metaworld")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("overrides", nargs="*")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as root:
        serial = mean_times(args.config, args.overrides, False, args.steps, root)
        overlapped = mean_times(args.config, args.overrides, True, args.steps, root)
    gen, train = serial["time/generate_rollouts"], serial["time/actor_training"]
    print(f"\n| {args.config} (separate placement, {os.cpu_count()} CPUs) | mean over steps 2-{args.steps} |")
    print("|---|---|")
    print(f"| serial step | {serial['time/step']:.2f} s (rollouts {gen:.2f} s, training {train:.2f} s) |")
    print(f"| overlapped step | {overlapped['time/step']:.2f} s (training {overlapped['time/actor_training']:.2f} s, "
          f"the next batch generated meanwhile {overlapped['time/overlapped_generation']:.2f} s) |")  # fmt: skip
    print(f"\noverlapped / serial = {overlapped['time/step'] / serial['time/step']:.2f} (target <= 0.7)")


if __name__ == "__main__":
    main()
