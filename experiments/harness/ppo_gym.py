"""PPO through the full Ray runtime (env, rollout, actor as separate workers) on gymnasium tasks.

Trains until the mean deterministic evaluation return reaches the published bar for a correct PPO
(CartPole-v1 >= 475, Pendulum-v1 >= -200) or a step budget runs out, and prints the training steps,
env steps and wall time it took.

    .venv/bin/python -m experiments.harness.ppo_gym                      # both tasks
    .venv/bin/python -m experiments.harness.ppo_gym --task cartpole --seed 2
"""

from __future__ import annotations

import argparse
import time

from policy_and_value.config import load_config
from policy_and_value.runner import EmbodiedRunner

TASKS = {
    # name: (config, target eval return, max training steps)
    "cartpole": ("ppo_mlp_cartpole", 475.0, 300),
    "pendulum": ("ppo_gym_pendulum", -200.0, 400),
}
SEPARATE = ["cluster=separate"]


def run(task: str, seed: int, eval_every: int, extra: list[str]) -> dict[str, float]:
    """Train one task; returns steps, env steps, wall time and the best eval return."""
    config, target, max_steps = TASKS[task]
    overrides = [
        f"runner.seed={seed}",
        f"runner.max_steps={max_steps}",
        "runner.progress_bar=false",
        "runner.save_interval=-1",
        f"runner.logger.experiment_name=bench_ppo_{task}_s{seed}",
        "runner.logger.log_path=logs/benchmarks",
        *SEPARATE,
        *extra,
    ]
    cfg = load_config(config, overrides)
    runner = EmbodiedRunner(cfg)
    env_steps_per_step = (
        cfg.env.train.num_envs * cfg.algorithm.n_chunk_steps * cfg.env.train.num_action_chunks
    )
    start = time.perf_counter()
    best, reached = float("-inf"), False
    try:
        runner.setup()
        print(runner.placement.describe(), flush=True)
        while runner.global_step < max_steps:
            metrics = runner.step()
            runner.global_step += 1
            if runner.global_step % eval_every == 0:
                ev = runner.evaluate()["eval/return"]
                best = max(best, ev)
                print(
                    f"[{task}] step {runner.global_step:4d} env_steps {runner.global_step * env_steps_per_step:8d} "
                    f"train_return {metrics.get('env/return', float('nan')):8.1f} eval_return {ev:8.1f} "
                    f"wall {time.perf_counter() - start:6.0f}s",
                    flush=True,
                )
                if ev >= target:
                    reached = True
                    break
    finally:
        runner.shutdown()
    return {
        "task": task,
        "seed": seed,
        "reached": reached,
        "target": target,
        "best_eval_return": best,
        "train_steps": runner.global_step,
        "env_steps": runner.global_step * env_steps_per_step,
        "wall_s": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=[*TASKS, "all"], default="all")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("overrides", nargs="*", help="extra config overrides (key=value)")
    args = parser.parse_args()
    tasks = list(TASKS) if args.task == "all" else [args.task]
    results = [run(t, args.seed, args.eval_every, args.overrides) for t in tasks]
    print("\n| task | target | reached | best eval return | training steps | env steps | wall time |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['task']} | {r['target']:.0f} | {'yes' if r['reached'] else 'no'} | {r['best_eval_return']:.1f} | "
            f"{r['train_steps']} | {r['env_steps']} | {r['wall_s']:.0f} s |"
        )


if __name__ == "__main__":
    main()
