"""Time from launch to the end of the first training step of a job (the quickstart by default), the wait a
user sees before anything trains, split into its phases from one run.

    .venv/bin/python benchmarks/startup.py [--config quickstart] [key=value ...]

Runs ``bash scripts/run_embodiment.sh CONFIG runner.max_steps=1`` as a user would (a fresh process: imports,
config validation, Ray start, workers, models, the evaluation before training when the config has one,
one training step) and reads the times back: the first row of ``metrics.jsonl`` is written when step 1
ends. Prints the total and the phases the run logs (evaluation, the step's own ``time/*``). Target: 30 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="quickstart")
    p.add_argument("overrides", nargs="*")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as root:
        metrics = Path(root) / "startup" / "metrics.jsonl"
        cmd = ["bash", str(REPO / "scripts" / "run_embodiment.sh"), args.config, *args.overrides,
               "runner.max_steps=1", "runner.save_interval=-1", "runner.progress_bar=false",
               f"runner.logger.log_path={root}", "runner.logger.experiment_name=startup"]  # fmt: skip
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        first_step = None
        while proc.poll() is None:
            if first_step is None and metrics.exists() and metrics.stat().st_size > 0:
                first_step = time.perf_counter() - start
            time.sleep(0.05)
        total = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"the job failed (exit {proc.returncode}): {proc.stderr.read().strip()[-500:]}")
        row = json.loads(metrics.read_text().splitlines()[0])
        first_step = first_step or total
    phases = {k: v for k, v in row.items() if k.startswith("time/") and not k.endswith("_share")}
    print(f"{args.config}: launch -> end of training step 1: {first_step:.1f} s (process exit {total:.1f} s; "
          f"{os.cpu_count()} CPUs)")  # fmt: skip
    for k, v in sorted(phases.items()):
        print(f"  {k:32s} {v:6.2f} s")
    print(f"  {'before step 1 (start-up, eval)':32s} {first_step - phases.get('time/step', 0.0):6.2f} s")


if __name__ == "__main__":
    main()
