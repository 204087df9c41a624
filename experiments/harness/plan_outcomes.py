"""Does imagination rank its own plans as the simulator does? Read off plans recorded by
``toolkits.collect_episodes --policy-dir P --imagine CONFIG`` (each episode a whole episode the policy played in the
world model, then replayed open loop in the simulator from the same start; its index keeps the plan's imagined
return and success beside the simulator's outcome).

    python -m experiments.harness.plan_outcomes --episodes D

Over all plans and per task: the simulator's success rate of the plans beside the imagined one, the AUC of the
imagined return and of imagined success for the simulator's outcome, and within starts (a start's plans, where their
outcomes differ) the mean Spearman of the imagined return with it. This is what RL in imagination needs (its
advantages rank the policy's own plans); ``imagined_outcomes`` compares imagined and real episodes that share only
their start.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict

import numpy as np


def within_start_spearman(starts: list, returns: np.ndarray, real: np.ndarray) -> tuple[float, int]:
    """The mean Spearman correlation of the imagined return with the outcome over the starts whose plans differ in
    outcome, and how many such starts there are (nan, 0 without one)."""
    from scipy.stats import spearmanr

    groups: dict = defaultdict(list)
    for i, start in enumerate(starts):
        groups[start].append(i)
    rhos = [
        spearmanr(returns[ids], real[ids]).statistic
        for ids in groups.values()
        if 0 < real[ids].sum() < len(ids) and np.ptp(returns[ids]) > 0
    ]
    return (float(np.mean(rhos)), len(rhos)) if rhos else (float("nan"), 0)


def main(argv: list[str] | None = None) -> int:
    """CLI: the table, all plans then per task."""
    from experiments.harness.imagined_outcomes import cell

    p = argparse.ArgumentParser(
        prog="python -m experiments.harness.plan_outcomes", description=__doc__.splitlines()[0]
    )
    p.add_argument("--episodes", required=True, help="plans recorded by toolkits.collect_episodes --imagine")
    args = p.parse_args(argv)
    index = os.path.join(args.episodes, "index.json")
    if not os.path.isfile(index):
        p.error(f"--episodes={args.episodes}: no index.json there")
    entries = [e for e in json.load(open(index))["episodes"] if "imagined_return" in e]
    if not entries:
        p.error(
            f"--episodes={args.episodes}: no plan with its imagined return (record with collect_episodes --imagine)"
        )
    tasks = np.array([e["task"] for e in entries])
    real = np.array([bool(e["success_once"]) for e in entries])
    ret = np.array([float(e["imagined_return"]) for e in entries])
    imagined = np.array([bool(e["imagined_success"]) for e in entries])
    starts = [(e["task"], e["reset_state_id"]) for e in entries]
    print("| plans | n | success replayed in the simulator | imagined success | AUC of the imagined return "
          "| AUC of imagined success | within-start Spearman (starts) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name in ["all", *sorted(set(tasks))]:
        pick = np.ones(len(tasks), bool) if name == "all" else tasks == name
        y = real[pick]
        rho, n = within_start_spearman([s for s, k in zip(starts, pick, strict=True) if k], ret[pick], y)
        print(f"| {name} | {pick.sum()} | {y.mean():.1%} | {imagined[pick].mean():.1%} | {cell(ret, pick, y)} "
              f"| {cell(imagined.astype(float), pick, y)} | {rho:.3f} ({n}) |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
