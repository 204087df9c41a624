"""Success rate of Meta-World's scripted experts (no noise, no forced failures) on the MT10 tasks.

Runs the same batched env and expert code as ``toolkits.collect_episodes`` without images.

    .venv/bin/python -m experiments.harness.expert_success [--episodes 50] [--max-episode-steps 150]
"""

from __future__ import annotations

import argparse
import time

from policy_and_value.envs.metaworld_tasks import MT10_TASKS
from toolkits.collect_episodes import collect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--max-episode-steps", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.time()
    summary = collect(
        list(MT10_TASKS), args.episodes, ["corner"], 64, 0.0, 0.0, args.max_episode_steps, args.seed,
        num_envs=len(MT10_TASKS), use_images=False, log=lambda *_: None,
    )  # fmt: skip
    print("\n| task | episodes | expert success |\n|---|---|---|")
    for task, s in summary.items():
        print(f"| {task} | {s['episodes']} | {s['success_rate']:.0%} |")
    print(f"\n{len(MT10_TASKS) * args.episodes} episodes in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
