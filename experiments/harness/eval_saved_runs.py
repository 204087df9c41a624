"""Evaluate the policies that ``imagination_gain.py`` runs saved, on layouts of your choice.

    .venv/bin/python -m experiments.harness.eval_saved_runs --config rl_metaworld_outcome_ppo --layout-seed 0 \\
        --runs imitation logs/ppo_dense/wm_seed0 logs/ppo_dense_shuffle/wm_seed0 [--seed 0] [--episodes 50]

Why: ``imagination_gain.py`` evaluates on layouts training never sees; evaluating the same saved weights
on the training layouts (``--layout-seed`` of the train env) tells a gain that does not carry over to
new layouts from one that is not there at all. ``imitation`` stands for the config's start policy; a run
directory's latest checkpoint (``checkpoints/latest``, as the exporter resolves it) is loaded. Evaluation is ``imagination_gain``'s own
(ODE sampling, the same noise draws and layouts for every policy of a seed). Prints success per task and
the mean for each run, and with ``--out`` writes them as JSON.
"""

from __future__ import annotations

import argparse

from experiments.harness.imagination_gain import evaluate
from policy_and_value.config import load_config
from toolkits.base.atomic import write_json_atomically
from toolkits.ckpt_convertor.export_policy import ExportError, resolve_checkpoint


def latest_weights(run_dir: str) -> str:
    """The rollout weights of a run directory's latest checkpoint (or of a ``global_step_N`` directory)."""
    try:
        step = resolve_checkpoint(run_dir)
    except ExportError:
        raise SystemExit(f"--runs {run_dir}: no such directory") from None
    path = step / "rollout" / "model.safetensors"
    if not path.is_file():
        raise SystemExit(f"--runs {run_dir}: no rollout weights at {path}")
    return str(path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="rl_metaworld_outcome_ppo")
    p.add_argument("--runs", nargs="+", required=True, help="run directories, or 'imitation' for the start")
    p.add_argument("--layout-seed", type=int, required=True, help="the layouts to evaluate on")
    p.add_argument("--seed", type=int, default=0, help="the evaluation's noise and layout draws")
    p.add_argument("--episodes", type=int, default=50, help="per task")
    p.add_argument("--out", default=None, help="write the results as JSON here")
    from toolkits.base.cli import parse_with_overrides

    args, overrides = parse_with_overrides(p)  # key=value overrides anywhere among the options
    weights = {run: None if run == "imitation" else latest_weights(run) for run in args.runs}  # checked first
    cfg = load_config(args.config, [*overrides, f"env.eval.layout_seed={args.layout_seed}"])
    results = {}
    for run, path in weights.items():
        success = evaluate(cfg, path, args.episodes, args.seed)
        results[run] = success
        mean = 100 * sum(success.values()) / len(success)
        print(run, {t: round(100 * s, 1) for t, s in success.items()}, f"mean {mean:.1f}", flush=True)
    if args.out:
        write_json_atomically(args.out, results)


if __name__ == "__main__":
    main()
