"""How often do a policy's samples from one start end differently? The share GRPO can learn from.

    .venv/bin/python -m experiments.harness.outcome_exploration --policy-dir assets/metaworld_outcome/policy \\
        [--tasks reach-v3 button-press-topdown-v3 door-open-v3] [--groups-per-task 4] [--group-size 8] \\
        [--noise-levels 0.3 0.5 0.8] [--pi0 KEY=VALUE ...] [--seed 0]

For every sampler (the policy's flow-SDE at each ``--noise-level``, plus the ODE, whose samples differ by
their initial noise only), groups
of ``--group-size`` envs start from one layout each (training layouts, ``layout_seed`` 0) and play one
whole episode (150 steps, ending at success), as ``rl_metaworld_outcome`` rolls out. Prints per task the
success of the samples and the share of groups whose samples did not all end alike (all succeeded or all
failed): only those groups carry a GRPO signal (``rollout/mixed_group_fraction`` in training).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from policy_and_value.config.schema import env_config


@torch.no_grad()
def group_outcomes(policy, tasks: list[str], groups_per_task: int, group_size: int, cameras: list[str],
                   max_episode_steps: int, seed: int) -> np.ndarray:  # fmt: skip
    """bool [len(tasks) * groups_per_task, group_size]: success of each sample, groups task-major."""
    from policy_and_value.envs.metaworld_env import MetaWorldEnv
    from policy_and_value.offline.evaluate import play_episodes

    n = len(tasks) * groups_per_task * group_size
    cfg = env_config(
        env_type="metaworld", tasks=tasks, num_envs=n, num_action_chunks=policy.num_action_chunks,
        max_episode_steps=max_episode_steps, auto_reset=False, use_fixed_reset_state_ids=True,
        group_size=group_size, cameras=cameras, reward_signal="success",
    )  # fmt: skip
    env = MetaWorldEnv(cfg, n, seed=seed)
    torch.manual_seed(seed)
    try:
        success = play_episodes(policy, env, mode="train")  # rollouts sample as training does
        task_ids = np.asarray(env.task_ids)
    finally:
        env.close()
    out = success.numpy().reshape(-1, group_size)
    group_task = task_ids.reshape(-1, group_size)[:, 0]
    return out[np.argsort(group_task, kind="stable")]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy-dir", default="assets/metaworld_outcome/policy")
    p.add_argument("--tasks", nargs="+", default=["reach-v3", "button-press-topdown-v3", "door-open-v3"])
    p.add_argument("--cameras", nargs="+", default=["corner", "gripperPOV"])
    p.add_argument("--groups-per-task", type=int, default=4)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--noise-levels", type=float, nargs="+", default=[0.3, 0.5, 0.8])
    p.add_argument(
        "--pi0",
        nargs="*",
        default=[],
        help="sampling overrides, e.g. noise_method=flow_sde joint_logprob=true",
    )
    p.add_argument("--max-episode-steps", type=int, default=150)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    from wm_action_ranking import pi0_overrides  # the sibling benchmark's KEY=VALUE parser

    from policy_and_value.models.pi0 import from_pretrained

    extra = pi0_overrides(args.pi0)
    samplers = [("ODE (initial noise only)", {"noise_method": "flow_ode"})]
    samplers += [
        (f"flow-SDE {lvl}", {"noise_method": "flow_sde", "noise_level": lvl, **extra})
        for lvl in args.noise_levels
    ]
    print(
        f"{len(args.tasks)} tasks x {args.groups_per_task} groups of {args.group_size} samples, one layout per group\n"
    )
    print(
        "| sampler | "
        + " | ".join(f"{t} success / mixed" for t in args.tasks)
        + " | all success / mixed | s |"
    )
    print("|---|" + "---|" * (len(args.tasks) + 2))
    for name, overrides in samplers:
        start = time.time()
        policy = from_pretrained(args.policy_dir, **overrides).eval()
        outcomes = group_outcomes(
            policy, args.tasks, args.groups_per_task, args.group_size, args.cameras, args.max_episode_steps,
            args.seed,
        )  # fmt: skip
        mixed = outcomes.any(1) & ~outcomes.all(1)
        cells = []
        for k in range(len(args.tasks)):
            rows = slice(k * args.groups_per_task, (k + 1) * args.groups_per_task)
            cells.append(f"{outcomes[rows].mean():.0%} / {mixed[rows].mean():.0%}")
        cells.append(f"{outcomes.mean():.0%} / {mixed.mean():.0%}")
        print(f"| {name} | " + " | ".join(cells) + f" | {time.time() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
