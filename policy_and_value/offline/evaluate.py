"""Success of a policy in the real Meta-World, LIBERO or ManiSkill3 simulator, per task, over a fixed number of episodes.

    python -m policy_and_value.offline.evaluate --model-dir logs/sft/policy --tasks reach-v3 push-v3 \\
        --episodes 50 --cameras corner gripperPOV
    python -m policy_and_value.offline.evaluate --model-dir logs/sft/policy --suite libero_object \\
        --tasks pick_up_the_ketchup_and_place_it_in_the_basket --episodes 10
    python -m policy_and_value.offline.evaluate --model-dir logs/sft/policy --suite maniskill --tasks PickCube-v1

Episodes run batched in one env (``MetaWorldEnv``, or ``LiberoEnv`` / ``ManiSkillEnv`` with ``--suite``; deterministic ODE
sampling, ``mode="eval"``); an episode succeeds when the env reports success before ``--max-episode-steps``.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from policy_and_value.config.env_schema import derive_env
from policy_and_value.config.schema import env_config
from policy_and_value.models.base import BasePolicy
from toolkits.base.cli import tool_prog
from toolkits.base.errors import ConfigError, config_error
from toolkits.base.seeding import RandomStream


@torch.no_grad()
def evaluate_in_metaworld(
    policy: BasePolicy,
    tasks: list[str],
    episodes_per_task: int,
    cameras: list[str],
    image_size: int = 64,
    state_type: str = "full",
    max_episode_steps: int = 150,
    num_envs: int | None = None,
    seed: int = 1000,
    layout_seed: int = 0,
    simulator: dict[str, Any] | None = None,
) -> dict[str, dict[str, float]]:
    """Run rounds of batched episodes until every task has ``episodes_per_task``; per-task success.
    Layouts are drawn (by ``seed``) from the 50 per task of ``layout_seed`` (``EnvConfig.layout_seed``); the policy's
    noise comes from a stream of ``seed`` too, so policies evaluated with one seed meet the same draws (a comparison
    paired on noise) and the process's random streams are left as they were.
    ``simulator``: env keys of another simulator (``{"env_type": "libero", "suite": "libero_object"}`` or
    ``{"env_type": "maniskill"}``): its start states drawn by ``seed``, its proprio state and success
    (``state_type`` is then ignored)."""
    from policy_and_value.envs.registry import make_env

    num_envs = num_envs or len(tasks) * min(episodes_per_task, 10)
    num_envs = max(len(tasks), num_envs - num_envs % len(tasks))
    cfg = env_config(
        env_type="metaworld", tasks=tasks, num_envs=num_envs, num_action_chunks=policy.num_action_chunks,
        max_episode_steps=max_episode_steps, auto_reset=False, cameras=cameras, image_size=image_size,
        state_type=state_type, layout_seed=layout_seed,
    )  # fmt: skip
    if simulator is not None:
        cfg = derive_env(cfg, {"state_type": "proprio", "reward_signal": "success", **simulator})
    env = make_env(cfg, num_envs, seed=seed)
    results: dict[str, list[bool]] = defaultdict(list)
    policy.eval()
    noise = RandomStream(seed)
    try:
        while min(len(results[t]) for t in tasks) < episodes_per_task:
            with noise:
                success = play_episodes(policy, env, mode="eval")
            for i, task_id in enumerate(env.task_ids):
                task = tasks[task_id]
                if len(results[task]) < episodes_per_task:
                    results[task].append(bool(success[i]))
    finally:
        env.close()
    return {t: {"episodes": len(results[t]), "success_rate": float(np.mean(results[t]))} for t in tasks}


@torch.no_grad()
def play_episodes(policy: BasePolicy, env, mode: str = "eval") -> torch.Tensor:
    """Reset ``env`` (an ``auto_reset: false`` simulator env) and play one episode per env with
    ``policy.predict(obs, mode)``; bool [num_envs]: whether each reported success before its limit."""
    obs, _ = env.reset()
    alive = torch.ones(env.num_envs, dtype=torch.bool)
    success = torch.zeros(env.num_envs, dtype=torch.bool)
    while alive.any():
        actions = policy.predict(obs, mode=mode).actions
        obs, _, terminated, truncated, _ = env.chunk_step(actions.clamp(-1, 1))
        success |= alive & terminated  # terminated = the env reported success
        alive &= ~(terminated | truncated)
    return success


def _check_names(flag: str, values: list[str], allowed: list[str] | tuple[str, ...], what: str) -> None:
    """Every one of ``values`` is in ``allowed``; the first that is not is one line (with a did-you-mean)."""
    for value in values:
        if value not in allowed:
            close = difflib.get_close_matches(value, list(allowed), n=1)
            raise config_error(flag, value, (f"did you mean {close[0]!r}? " if close else "") + what)


def check_args(args: argparse.Namespace) -> dict[str, Any] | None:
    """Check every flag before any work starts (defaults of ``--suite`` filled in); returns the simulator's
    env keys (None: Meta-World). A bad value is a ``ConfigError``: one line naming the flag, the value and
    what is allowed."""
    from policy_and_value.config.sizes import env_sizes
    from policy_and_value.models.pi0.configuration_pi0 import Pi0Config, policy_dir_problem

    for flag, value in (
        ("--episodes", args.episodes),
        ("--image-size", args.image_size),
        ("--max-episode-steps", args.max_episode_steps),
        ("--num-envs", args.num_envs),
    ):
        if value is not None and value < 1:
            raise config_error(flag, value, "must be >= 1")
    simulator = None
    if args.suite is not None:
        from policy_and_value.envs.suites import LIBERO_SUITES, NAMES, suite

        try:
            facts = suite(args.suite)
        except KeyError:
            raise config_error("--suite", args.suite, f"allowed: {', '.join(NAMES)}") from None
        except ImportError as err:  # its simulator is not installed: the message names the install command
            raise config_error("--suite", args.suite, str(err)) from None
        allowed = (
            f"allowed: {facts.tasks_allowed}" if args.suite == "maniskill" else f"not a task of {args.suite}"
        )
        _check_names("--tasks", args.tasks or [], facts.tasks, allowed)
        args.tasks = args.tasks or facts.tasks
        args.cameras = args.cameras or list(facts.cameras)
        args.max_episode_steps = args.max_episode_steps or facts.step_limit(args.tasks)
        simulator = dict(facts.env_keys)
        if args.start_states != "all":
            if args.suite not in LIBERO_SUITES:
                raise config_error(
                    "--start-states", args.start_states, "a LIBERO suite's only (the others: --layout-seed)"
                )
            simulator["start_states"] = args.start_states
        cameras: tuple[str, ...] = facts.cameras
    else:
        from policy_and_value.envs.metaworld_tasks import CAMERAS, MT50_TASKS

        if not args.tasks:
            raise config_error(
                "--tasks",
                None,
                "required (Meta-World task names) unless --suite names a LIBERO suite or maniskill",
            )
        _check_names(
            "--tasks", args.tasks, MT50_TASKS, "unknown Meta-World task; allowed: MT50 names like reach-v3"
        )
        cameras = CAMERAS
    args.cameras = args.cameras or ["corner"]
    _check_names("--cameras", args.cameras, cameras, f"allowed: {', '.join(cameras)}")
    args.max_episode_steps = args.max_episode_steps or 150
    problem = policy_dir_problem(args.model_dir)
    if problem is not None:
        raise config_error("--model-dir", args.model_dir, problem)
    saved = Pi0Config.load(Path(args.model_dir) / "config.json")
    keys = {"env_type": "metaworld", "state_type": args.state_type}
    if simulator is not None:
        keys.update(state_type="proprio", **simulator)  # as evaluate_in_metaworld builds the env
    env = env_config(tasks=args.tasks, **keys)
    action_dim, state_dim = env_sizes(env) or (saved.action_dim, saved.state_dim)
    where = args.suite or "Meta-World"
    if saved.action_dim != action_dim:
        raise config_error(
            "--model-dir", args.model_dir, f"the policy gives {saved.action_dim}-dim actions, {where} takes {action_dim}"
        )  # fmt: skip
    if saved.state_dim != state_dim:
        flag, value = ("--suite", args.suite) if simulator else ("--state-type", args.state_type)
        raise config_error(
            flag, value, f"gives a {state_dim}-dim state, the policy in {args.model_dir} reads {saved.state_dim}"
        )  # fmt: skip
    return simulator


def main(argv: list[str] | None = None) -> int:
    """CLI: load a policy directory and print success per task."""
    from policy_and_value.models.pi0 import from_pretrained

    p = argparse.ArgumentParser(
        prog=tool_prog("policy_and_value.offline.evaluate"), description=__doc__.splitlines()[0]
    )
    p.add_argument("--model-dir", required=True, help="a policy directory (e.g. <sft output_dir>/policy)")
    p.add_argument("--tasks", nargs="+", help="task names (with --suite: default all of the suite)")
    p.add_argument(
        "--suite", default=None,
        help="a LIBERO suite (e.g. libero_object) or maniskill to evaluate in instead of Meta-World",
    )  # fmt: skip
    p.add_argument("--episodes", type=int, default=50, help="episodes per task")
    p.add_argument(
        "--cameras",
        nargs="+",
        default=None,
        help="default: corner (LIBERO: both of its cameras; ManiSkill: base_camera)",
    )
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--state-type", choices=["full", "proprio"], default="full")
    p.add_argument(
        "--max-episode-steps",
        type=int,
        default=None,
        help="default: 150 (LIBERO: the suite's limit; ManiSkill: 50)",
    )
    p.add_argument("--num-envs", type=int, default=None)
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument(
        "--layout-seed", type=int, default=0, help="which 50 layouts per task (another than training's: unseen ones)"
    )  # fmt: skip
    p.add_argument(
        "--start-states", choices=["all", "train", "heldout"], default="all",
        help="LIBERO: each task's 50 init states, the first 25 (train) or the last 25 (heldout: unseen ones)",
    )  # fmt: skip
    args = p.parse_args(argv)
    try:
        simulator = check_args(args)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    start = time.time()
    policy = from_pretrained(args.model_dir)
    res = evaluate_in_metaworld(
        policy, args.tasks, args.episodes, args.cameras, args.image_size, args.state_type,
        args.max_episode_steps, args.num_envs, args.seed, args.layout_seed, simulator,
    )  # fmt: skip
    print("| task | episodes | success |\n|---|---|---|")
    for task, r in res.items():
        print(f"| {task} | {r['episodes']} | {r['success_rate']:.0%} |")
    print(
        f"mean success {np.mean([r['success_rate'] for r in res.values()]):.1%} in {time.time() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
