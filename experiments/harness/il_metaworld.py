"""Imitation baseline: a tiny pi0 trained on scripted-expert episodes, evaluated in the real simulator.

    .venv/bin/python -m experiments.harness.il_metaworld [--tasks reach-v3 drawer-close-v3 button-press-topdown-v3] \\
        [--train-episodes 50] [--steps 3000] [--eval-episodes 50] [--out logs/il_metaworld]

Three stages, each timed: collect expert episodes (``toolkits.collect_episodes``, action noise for
state coverage), imitation training (``policy_and_value.offline.train_sft``), and evaluation of the
result in Meta-World (deterministic sampling, ``--eval-episodes`` per task on layouts drawn with a
different seed). Prints success per task: the starting point world-model RL has to improve on.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

DEFAULT_TASKS = ["reach-v3", "drawer-close-v3", "button-press-topdown-v3"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=DEFAULT_TASKS)
    p.add_argument("--train-episodes", type=int, default=50, help="expert episodes per task")
    p.add_argument("--action-noise", type=float, default=0.1)
    p.add_argument("--cameras", nargs="+", default=["corner", "gripperPOV"])
    p.add_argument("--max-episode-steps", type=int, default=150)
    p.add_argument("--steps", type=int, default=3000, help="imitation training steps")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--eval-episodes", type=int, default=50)
    p.add_argument("--out", default="logs/il_metaworld")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    from policy_and_value.offline.config import SFTConfig
    from policy_and_value.offline.evaluate import evaluate_in_metaworld
    from policy_and_value.offline.train_sft import train_sft
    from toolkits.base.compose import compose_config
    from toolkits.collect_episodes import collect
    from toolkits.episodes import EpisodeWriter

    data = os.path.join(args.out, "episodes")
    times = {}
    start = time.time()
    if os.path.isfile(os.path.join(data, "index.json")):
        print(f"using the episodes already in {data}")
    else:
        writer = EpisodeWriter(data, info={"cameras": args.cameras, "image_size": 64})
        summary = collect(
            args.tasks, args.train_episodes, args.cameras, 64, args.action_noise, 0.0, args.max_episode_steps,
            args.seed, num_envs=2 * len(args.tasks), writer=writer, log=lambda *_: None,
        )  # fmt: skip
        writer.close(summary)
        for task, s in summary.items():
            print(f"collected {task}: {s['episodes']} episodes, expert success {s['success_rate']:.0%}")
    times["collect"] = time.time() - start

    start = time.time()
    overrides = [
        f"data.path={data}", f"data.tasks=[{','.join(args.tasks)}]", f"output_dir={os.path.join(args.out, 'sft')}",
        f"train.max_steps={args.steps}", f"train.batch_size={args.batch_size}", f"train.seed={args.seed}",
        "train.save_interval=1000", "train.log_interval=250",
    ]  # fmt: skip
    cfg = SFTConfig.model_validate(compose_config("offline/sft_pi0_tiny", overrides))
    policy_dir = train_sft(cfg)
    times["train"] = time.time() - start

    start = time.time()
    from policy_and_value.models.pi0 import from_pretrained

    policy = from_pretrained(policy_dir)
    results = evaluate_in_metaworld(
        policy, args.tasks, args.eval_episodes, args.cameras, 64, cfg.data.state_type, args.max_episode_steps,
        num_envs=2 * len(args.tasks), seed=args.seed + 1000,
    )  # fmt: skip
    times["eval"] = time.time() - start

    print(f"\n| task | eval episodes | imitation success (tiny pi0, {args.steps} steps) |\n|---|---|---|")
    for task, r in results.items():
        print(f"| {task} | {r['episodes']} | {r['success_rate']:.0%} |")
    print(f"| mean | | {np.mean([r['success_rate'] for r in results.values()]):.1%} |")
    print(
        f"\nwall time: collect {times['collect']:.0f} s, train {times['train']:.0f} s, eval {times['eval']:.0f} s "
        f"(policy in {policy_dir})"
    )


if __name__ == "__main__":
    main()
