"""Does the policy aim at its target? Where the hand ends against where the target is, across layouts.

    .venv/bin/python -m experiments.harness.policy_aim --config rl_metaworld_dense_critic \\
        --runs imitation logs/critic/wm_seed0 [--layout-seed 1] [--episodes 50] [--seed 0]

Why: a policy imitated from a few demonstrations can replay one trajectory whatever the layout, and
succeed only where the target happens to lie on it; RL then has to teach it to read the target's
position, which a success rate alone does not show. For every task whose hand must end on a point
(``reach-v3``: the goal; ``button-press-topdown-v3``: the button), each policy plays one ODE episode on
each of ``--episodes`` layouts and the hand's x and y where the episode ends (success, or the step limit)
are regressed on the target's: slope 1 follows the target, 0 goes to the same place every time. Also
printed: success, the correlation, the hand's mean offset from the target (bias: what a policy that goes
to one place can still correct) and how far (xy) the hand ends from the target in successes and failures.
``--open-loop`` adds the ceiling of a policy that ignores where the button is: the best success of a
scripted hand that presses at one fixed point (the best of a 1 cm grid) on the same layouts.
``imitation`` stands for the config's start policy; a run directory's latest checkpoint is loaded (as
``eval_saved_runs.py`` does). Config overrides (``key=value``) may stand anywhere among the options.
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import numpy as np
import torch

# where each task's target sits in the full 39-dim state: reach's goal, the button's position
TARGETS = {"reach-v3": slice(36, 39), "button-press-topdown-v3": slice(4, 7)}


def task_env(cfg, task: str, episodes: int, layout_seed: int, seed: int, **update):
    """One Meta-World env per episode, all of ``task``, as the config's eval env (``update``: other keys)."""
    from policy_and_value.envs.metaworld_env import MetaWorldEnv

    ecfg = cfg.env.eval.model_copy(
        update={
            "tasks": [task],
            "num_envs": episodes,
            "auto_reset": False,
            "layout_seed": layout_seed,
            **update,
        }
    )
    return MetaWorldEnv(ecfg, episodes, seed=1000 + seed)


@torch.no_grad()
def aim(policy, cfg, task: str, episodes: int, layout_seed: int, seed: int) -> dict[str, float]:
    """Success, slopes and correlations of the hand's end x / y on the target's, its mean offset from the
    target (bias, m) and the xy misses (m)."""
    env = task_env(cfg, task, episodes, layout_seed, seed)
    torch.manual_seed(seed)
    try:
        obs, _ = env.reset()
        target = obs["state"][:, TARGETS[task]].numpy().copy()
        end = obs["state"][:, 0:3].numpy().copy()
        alive = torch.ones(episodes, dtype=torch.bool)
        success = torch.zeros(episodes, dtype=torch.bool)
        while alive.any():
            actions = policy.predict(obs, mode="eval").actions
            obs, _, terminated, truncated, _ = env.chunk_step(actions.clamp(-1, 1))
            live = alive.numpy()
            end[live] = obs["state"][live, 0:3].numpy()  # the hand where each episode last stepped
            success |= alive & terminated
            alive &= ~(terminated | truncated)
    finally:
        env.close()
    won = success.numpy()
    miss = np.linalg.norm(end[:, :2] - target[:, :2], axis=1)
    out = {"success": float(won.mean())}
    for d, axis in enumerate("xy"):
        out[f"slope_{axis}"] = float(np.polyfit(target[:, d], end[:, d], 1)[0])
        out[f"corr_{axis}"] = float(np.corrcoef(target[:, d], end[:, d])[0, 1])
        out[f"bias_{axis}"] = float((end[:, d] - target[:, d]).mean())
    out["miss_success"] = float(miss[won].mean()) if won.any() else float("nan")
    out["miss_failure"] = float(miss[~won].mean()) if (~won).any() else float("nan")
    return out


class FixedPress:
    """A scripted hand that moves over one fixed (x, y), whatever the layout, and presses down there."""

    def __init__(self, point: tuple[float, float], num_action_chunks: int):
        self.xy = torch.tensor(point, dtype=torch.float32)
        self.chunk = num_action_chunks

    def predict(self, obs, mode: str) -> SimpleNamespace:
        hand = obs["state"][:, 0:3]
        n = len(hand)
        above = (hand[:, :2] - self.xy).norm(dim=1) < 0.01  # over the point: go down, else stay up and move
        goal = torch.cat([self.xy.expand(n, 2), torch.where(above, 0.1, 0.35)[:, None]], dim=1)
        move = ((goal - hand) * 25).clamp(-1, 1)
        action = torch.cat([move, -torch.ones(n, 1)], dim=1)
        return SimpleNamespace(actions=action[:, None].repeat(1, self.chunk, 1))


def press_at(cfg, point: tuple[float, float], episodes: int, layout_seed: int, seed: int) -> float:
    """Success of a scripted hand that presses down at one fixed (x, y) on every button-press-topdown layout."""
    from policy_and_value.offline.evaluate import play_episodes

    env = task_env(cfg, "button-press-topdown-v3", episodes, layout_seed, seed, use_images=False)
    try:
        success = play_episodes(FixedPress(point, env.cfg.num_action_chunks), env)
    finally:
        env.close()
    return float(success.float().mean())


def main() -> None:
    from experiments.harness.eval_saved_runs import latest_weights
    from experiments.harness.imagination_gain import eval_policy
    from policy_and_value.config import load_config

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="rl_metaworld_dense_critic")
    p.add_argument(
        "--runs", nargs="+", default=["imitation"], help="run directories, or 'imitation' for the start"
    )
    p.add_argument(
        "--tasks", nargs="+", default=None, help=f"default: the eval env's among {', '.join(TARGETS)}"
    )
    p.add_argument(
        "--layout-seed", type=int, default=1, help="the layouts (1: the evaluation's, unseen in training)"
    )
    p.add_argument("--episodes", type=int, default=50, help="layouts per task, one episode each")
    p.add_argument("--seed", type=int, default=0, help="the layout and noise draws")
    p.add_argument(
        "--open-loop", action="store_true",
        help="also the best success of a scripted press at one fixed (x, y) for every button layout (7x7 grid, 1 cm)",
    )  # fmt: skip
    from toolkits.base.cli import parse_with_overrides

    args, overrides = parse_with_overrides(p)  # key=value overrides anywhere among the options
    weights = {run: None if run == "imitation" else latest_weights(run) for run in args.runs}  # checked first
    cfg = load_config(args.config, overrides)
    tasks = args.tasks or [t for t in cfg.env.eval.tasks if t in TARGETS]
    for t in tasks:
        if t not in TARGETS:
            p.error(f"--tasks {t}: allowed: {', '.join(TARGETS)} (tasks whose hand ends on a point)")
    if not tasks:
        p.error(f"--config {args.config}: its eval tasks include none of {', '.join(TARGETS)}")
    print(
        "| policy | task | success | slope x (corr) | slope y (corr) | bias x / y (cm) | miss: success / failure (cm) |"
    )
    print("|---|---|---|---|---|---|---|")
    for run, path in weights.items():
        policy = eval_policy(cfg, path).eval()
        for task in tasks:
            r = aim(policy, cfg, task, args.episodes, args.layout_seed, args.seed)
            print(
                f"| {run} | {task} | {r['success']:.0%} | {r['slope_x']:+.2f} ({r['corr_x']:+.2f}) | "
                f"{r['slope_y']:+.2f} ({r['corr_y']:+.2f}) | {100 * r['bias_x']:+.1f} / {100 * r['bias_y']:+.1f} | "
                f"{100 * r['miss_success']:.1f} / "
                f"{100 * r['miss_failure']:.1f} |",
                flush=True,
            )
    if args.open_loop:
        best = max(
            (press_at(cfg, (x / 100, y / 100), args.episodes, args.layout_seed, args.seed), (x, y))
            for x in range(-4, 3) for y in range(81, 88)
        )  # fmt: skip
        print(
            f"open loop, button-press-topdown-v3: the best fixed press point (x {best[1][0]} cm, y {best[1][1]} cm) "
            f"succeeds on {best[0]:.0%} of the same layouts"
        )


if __name__ == "__main__":
    main()
