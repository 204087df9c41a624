"""The control for replayed plans: do recorded episodes' own actions, replayed open loop in the simulator from their
recorded start, reach the recorded outcome? If they do, a plan that fails when replayed fails because of the plan.

    python -m experiments.harness.replay_in_sim --config CONFIG --episodes D [--per-task 4]

The simulator is the config's ``env.eval`` (its tasks, at the recording's ``start_states`` or ``layout_seed``), each env reset
to the episode's ``reset_state_id``; printed per task: the recorded and the replayed outcomes, then how many agree.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch


def replay_task(env_cfg, episodes: list) -> np.ndarray:
    """Each episode's actions stepped one at a time (``env_cfg`` has one action a chunk) in a fresh batch of its
    simulator from its recorded start, each env stopped after its own length: whether it succeeded."""
    from experiments.harness.imagined_outcomes import pad_actions, play
    from policy_and_value.envs.registry import make_env

    padded, lengths = pad_actions([e.actions for e in episodes], 1)
    env = make_env(env_cfg, len(episodes), seed=0)
    try:
        obs, _ = env.reset(reset_state_ids=torch.tensor([e.meta["reset_state_id"] for e in episodes]))
        _, success = play(
            env, obs, lambda _, k: torch.from_numpy(padded[:, k : k + 1]), padded.shape[1], lengths
        )
    finally:
        env.close()
    return success


def main(argv: list[str] | None = None) -> int:
    """CLI: replay ``--per-task`` recorded episodes of each of the config's tasks; print the outcomes."""
    from policy_and_value.config import load_config
    from toolkits.episodes import EpisodeDataset

    p = argparse.ArgumentParser(
        prog="python -m experiments.harness.replay_in_sim", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--config", required=True, help="a job whose env.eval is the simulator the episodes were recorded in"
    )
    p.add_argument("--episodes", required=True, help="recorded episodes (toolkits.collect_episodes)")
    p.add_argument("--per-task", type=int, default=4, help="episodes a task to replay")
    args = p.parse_args(argv)
    if args.per_task < 1:
        p.error(f"--per-task={args.per_task}: must be >= 1")
    data = EpisodeDataset(args.episodes)
    cfg = load_config(args.config).env.eval
    update = {"num_action_chunks": 1, "auto_reset": False, "use_fixed_reset_state_ids": False,
              "max_episode_steps": max(e["length"] for e in data.entries) + 1}  # fmt: skip
    update |= {
        k: data.info[k] for k in ("start_states", "layout_seed") if k in data.info
    }  # the recording's starts
    agree = total = 0
    for task in cfg.tasks:
        ids = [i for i, e in enumerate(data.entries) if e["task"] == task][: args.per_task]
        if not ids:
            continue
        episodes = [data[i] for i in ids]
        replayed = replay_task(
            cfg.model_copy(update={**update, "tasks": [task], "num_envs": len(ids)}), episodes
        )
        recorded = np.array([bool(e.meta["success_once"]) for e in episodes])
        print(
            f"{task}: recorded {recorded.astype(int).tolist()}, replayed {replayed.astype(int).tolist()}",
            flush=True,
        )
        agree, total = agree + int((recorded == replayed).sum()), total + len(ids)
    if not total:
        p.error(f"--episodes={args.episodes}: no episode of the config's tasks {list(cfg.tasks)}")
    print(f"replayed outcome = recorded outcome in {agree} of {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
