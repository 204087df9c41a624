"""Rollout throughput with ``pipeline_stage_num`` 1 and 2, env and rollout on separate CPU slots.

For each setting it runs a few training steps of a job (``--config``: the Meta-World PPO job by default;
``ppo_pi0_metaworld`` for the pi0 policy) after one warm-up step, and
prints env steps/s during ``generate_rollouts`` and the share of step time that is env compute, model
compute (rollout + actor) and neither (transfers, weight sync, waiting), measured from the compute
intervals every worker records, in the same run.

    .venv/bin/python benchmarks/pipeline.py [--config ppo_cnn_metaworld] [--steps 4] [--num-envs 8] [key=value ...]
"""

from __future__ import annotations

import argparse
import statistics

from policy_and_value.config import load_config
from policy_and_value.runner import EmbodiedRunner

PLACEMENT = ["cluster=separate"]


def measure(config: str, stages: int, steps: int, num_envs: int, extra: list[str]) -> dict[str, float]:
    """Mean metrics over ``steps`` training steps after a warm-up step."""
    cfg = load_config(
        config,
        [
            f"rollout.pipeline_stage_num={stages}",
            f"env.train.num_envs={num_envs}",
            f"actor.global_batch_size={num_envs}",
            f"actor.micro_batch_size={num_envs}",
            "runner.progress_bar=false",
            "runner.val_check_interval=-1",
            "runner.save_interval=-1",
            "runner.logger.log_path=logs/benchmarks",
            f"runner.logger.experiment_name=bench_pipeline_{stages}",
            *PLACEMENT,
            *extra,
        ],
    )
    runner = EmbodiedRunner(cfg)
    rows = []
    try:
        runner.setup()
        runner.step()  # warm-up: worker start-up, first allocations
        for _ in range(steps):
            rows.append(runner.step())
    finally:
        runner.shutdown()
    env_steps = cfg.env.train.num_envs * cfg.algorithm.n_chunk_steps * cfg.env.train.num_action_chunks
    mean = {k: statistics.mean(r[k] for r in rows) for k in rows[0] if k.startswith("time/")}
    mean["env_steps_per_s"] = env_steps / mean["time/generate_rollouts"]
    return mean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="ppo_cnn_metaworld")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    results = {s: measure(args.config, s, args.steps, args.num_envs, args.overrides) for s in (1, 2)}
    print(
        "\n| pipeline_stage_num | env steps/s (rollout) | generate_rollouts s | step s | env compute | model compute | outside compute |"
    )
    print("|---|---|---|---|---|---|---|")
    for s, m in results.items():
        print(
            f"| {s} | {m['env_steps_per_s']:.1f} | {m['time/generate_rollouts']:.2f} | {m['time/step']:.2f} | "
            f"{m['time/env_compute_share']:.0%} | {m['time/model_compute_share']:.0%} | "
            f"{m['time/outside_compute_share']:.0%} |"
        )
    ratio = results[2]["env_steps_per_s"] / results[1]["env_steps_per_s"]
    print(f"\n{args.config}: rollout throughput with 2 stages / 1 stage = {ratio:.2f}x")


if __name__ == "__main__":
    main()
