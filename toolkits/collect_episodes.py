"""Record Meta-World, LIBERO or ManiSkill3 episodes from scripted expert policies (or a pi0 policy) into the episode format.

    python -m toolkits.collect_episodes --suite MT10 --episodes-per-task 20 --out data/mt10 \\
        --cameras corner gripperPOV --image-size 64 --action-noise 0.1 --fail-fraction 0.2
    python -m toolkits.collect_episodes --suite libero_object --tasks TASK ... --episodes-per-task 20 \\
        --out data/libero --image-size 64      # LIBERO-Object's pick-and-place expert (make install-libero)
    python -m toolkits.collect_episodes --suite maniskill --episodes-per-task 20 --out data/maniskill
    python -m toolkits.collect_episodes --tasks reach-v3 --episodes-per-task 30 --out data/policy_rollouts \\
        --cameras corner gripperPOV --policy-dir assets/quickstart/policy --noise-level 0.1

Episodes run batched in one ``MetaWorldEnv`` (or ``LiberoEnv`` for a LIBERO ``--suite``, cameras
``agentview robot0_eye_in_hand`` and the suite's step limit by default; ``ManiSkillEnv`` for ``--suite
maniskill``: PickCube-v1, PushCube-v1, StackCube-v1, ``base_camera``, 50 steps) (one action per step, episodes end at success or at
``--max-episode-steps``). A ``--fail-fraction`` share of episodes is made to fail on purpose (uniform
random actions), for reward models and advantage labelling; every episode records whether it
actually succeeded. Prints the success rate per task and stores it in ``index.json``.

With ``--policy-dir`` a pi0 policy acts instead of the experts: a chunk per call, executed one action
at a time, sampled with the flow SDE at ``--noise-level`` as a training rollout draws it (0: its
deterministic ODE actions). Its own episodes, near misses included, are the data a world model needs to
tell the policy's samples apart (``world_models.train`` on them, merged with expert episodes by
``toolkits.episodes.merge``). With ``--imagine CONFIG [KEY=VALUE ...]`` as well, the policy first plays each
whole episode in that job config's world model (``env.train``, started from the simulator's start frame and
state) and the simulator then replays those actions open loop: what the actions imagination chose really
do, to refit a state model on its own closed-loop rollouts (``worldrl recipe refit-state-model``, ``--plans``); each
episode keeps its plan's imagined return and success (``experiments.harness.plan_outcomes`` ranks them). Meta-World
or a LIBERO suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np
import torch

from policy_and_value.config.env_schema import derive_env
from policy_and_value.config.schema import EnvConfig, env_config
from policy_and_value.envs.base import env_task_names
from policy_and_value.envs.metaworld_tasks import (
    CAMERAS,
    MT10_TASKS,
    MT50_TASKS,
    select_state,
    state_type_for,
)
from policy_and_value.envs.suites import LIBERO_SUITES
from policy_and_value.envs.suites import NAMES as SUITES
from toolkits.base.cli import tool_prog
from toolkits.episodes import Episode, EpisodeWriter


def expert_for(task: str) -> Any:
    """The scripted expert policy object of a Meta-World task (ours where Meta-World's falls short)."""
    import metaworld.policies as policies

    from toolkits.experts import PegInsertSidePolicy

    own = {"peg-insert-side-v3": PegInsertSidePolicy}
    if task in own:
        return own[task]()

    names = {n.lower(): n for n in dir(policies) if n.startswith("Sawyer") and n.endswith("Policy")}
    key = ("sawyer" + task.replace("-", "") + "policy").lower()
    key = {"sawyerpeginsertsidev3policy": "sawyerpeginsertionsidev3policy"}.get(key, key)
    if key not in names:
        raise ValueError(f"--tasks: no scripted expert for {task!r}")
    return getattr(policies, names[key])()


class ExpertActor:
    """The scripted expert of each env's task, one action per step from the full state."""

    def __init__(self, tasks: list[str], task_ids: list[int]):
        self.experts = [expert_for(tasks[t]) for t in task_ids]
        self.name = "expert"

    def reset(self) -> None:
        """Experts keep no state between steps."""

    def __call__(self, obs: dict[str, Any]) -> np.ndarray:
        state = obs["state"].numpy().astype(np.float64)
        return np.stack([expert.get_action(s) for expert, s in zip(self.experts, state, strict=True)])


class PrivilegedExpertActor:
    """The scripted expert of each env's task reading the simulator's privileged state (object and target
    positions): LIBERO-Object's pick-and-place and ManiSkill's cube tasks."""

    def __init__(self, env: Any):
        from toolkits.experts import ManiSkillCubePolicy, expert_for_libero

        self.env = env
        if env.cfg.env_type == "libero":
            self.experts = [expert_for_libero(e.env.obj_of_interest) for e in env.envs]
        else:
            self.experts = [ManiSkillCubePolicy(env.tasks[t]) for t in env.task_ids]
        self.name = "expert"

    def reset(self) -> None:
        for expert in self.experts:
            expert.reset()

    def __call__(self, obs: dict[str, Any]) -> np.ndarray:
        return np.stack([x.get_action(self.env.privileged_obs(i)) for i, x in enumerate(self.experts)])


class PolicyActor:
    """A pi0 policy directory: one chunk per call to the policy, handed out one action per step."""

    def __init__(self, policy_dir: str, noise_level: float, seed: int):
        from policy_and_value.models.pi0 import from_pretrained

        overrides = {"noise_method": "flow_sde", "noise_level": noise_level} if noise_level > 0 else {}
        self.policy = from_pretrained(policy_dir, **overrides).eval()
        self.mode = "train" if noise_level > 0 else "eval"  # train: a flow-SDE sample, as rollouts draw
        self.state_type = state_type_for(self.policy.cfg.state_dim)
        self.name = f"pi0 {policy_dir}"
        self.plan: np.ndarray | None = None
        self.step = 0
        torch.manual_seed(seed)  # the initial and SDE noise of every call

    def reset(self) -> None:
        """Plan afresh at the start of an episode."""
        self.plan = None

    @torch.no_grad()
    def chunk(self, obs: dict[str, Any]) -> torch.Tensor:
        """The policy's next chunk of actions [N, C, A] for observations ``obs``."""
        seen = {**obs, "state": select_state(obs["state"], self.state_type)}
        return self.policy.predict(seen, mode=self.mode).actions.float().cpu()

    def __call__(self, obs: dict[str, Any]) -> np.ndarray:
        if self.plan is None or self.step == self.plan.shape[1]:
            self.plan = self.chunk(obs).numpy()
            self.step = 0
        self.step += 1
        return self.plan[:, self.step - 1]


class ImaginedPlanActor:
    """A pi0 policy that plays each whole episode in a world model first (the world-model env RL trains in:
    ``world``, a job's ``env.train``, started from the simulator's start observation) and then hands
    that episode's actions out one per step, open loop: the simulator records what the actions imagination led
    the policy to really do, the data that corrects a model where the policy's closed loop finds it wrong."""

    def __init__(self, policy: PolicyActor, world: EnvConfig, env_tasks: list[str], steps: int, seed: int):
        from world_models.env import WorldModelEnv

        if world.env_type != "world_model":
            raise SystemExit(f"--imagine: env.train.env_type={world.env_type}; expected world_model")
        n = len(env_tasks)  # one env per simulator env, in its task order: RL's task weights do not apply
        cfg = world.model_copy(update={"num_envs": n, "max_episode_steps": steps, "auto_reset": False, "group_size": 1,
                                       "use_fixed_reset_state_ids": False, "ignore_terminations": True,
                                       "visualize_wm_pred": False, "task_weights": None})  # fmt: skip
        self.env = WorldModelEnv(cfg, n, seed=seed)
        if env_task_names(self.env) != list(env_tasks):
            raise SystemExit(f"--imagine: env.train.tasks={cfg.tasks}; expected --tasks {list(dict.fromkeys(env_tasks))} "
                             "in the order given")  # fmt: skip
        self.policy, self.steps = policy, steps
        self.name = f"{policy.name}, planned in the world model of {cfg.state_model_config} ({cfg.dynamics_model_config})"
        self.plan: np.ndarray | None = None
        self.step = 0

    def reset(self) -> None:
        """Imagine afresh at the start of an episode."""
        self.plan = None

    def plan_meta(self, i: int) -> dict[str, Any]:
        """What env ``i``'s plan was worth in imagination, kept beside its real outcome (does imagination rank its
        own plans as the simulator does?)."""
        return {
            "imagined_return": float(self.imagined_return[i]),
            "imagined_success": bool(self.imagined_success[i]),
        }

    def __call__(self, obs: dict[str, Any]) -> np.ndarray:
        if self.plan is None:  # the episode's start: play it in imagination from this observation
            seen, _ = self.env.reset_to(obs["images"], select_state(obs["state"], self.env.cfg.state_type))
            chunks, n = [], self.env.num_envs
            self.imagined_return, self.imagined_success = np.zeros(n), np.zeros(n, bool)
            for _ in range(-(-self.steps // self.env.chunk)):
                chunks.append(self.policy.chunk(seen).clamp(-1, 1))
                seen, _, _, _, info = self.env.chunk_step(chunks[-1])
                if "episode" in info:  # its end in imagination: what the plan was worth there
                    ids = info["episode"]["env_ids"].numpy()
                    self.imagined_return[ids] = info["episode"]["return"].numpy()
                    self.imagined_success[ids] = info["episode"]["success_once"].numpy()
            self.plan = torch.cat(chunks, 1).numpy()
            self.step = 0
        self.step += 1
        return self.plan[:, self.step - 1]


def collect(
    tasks: list[str],
    episodes_per_task: int,
    cameras: list[str],
    image_size: int,
    action_noise: float,
    fail_fraction: float,
    max_episode_steps: int,
    seed: int,
    num_envs: int,
    writer: EpisodeWriter | None = None,
    use_images: bool = True,
    log=print,
    policy_dir: str | None = None,
    noise_level: float = 0.0,
    layout_seed: int = 0,
    simulator: dict[str, Any] | None = None,
    imagine: EnvConfig | None = None,
) -> dict[str, dict[str, float]]:
    """Run rounds of batched episodes until every task has ``episodes_per_task``; returns per-task stats.
    The experts act, or the pi0 policy of ``policy_dir`` (sampled at ``noise_level``), on layouts drawn
    from the benchmark of ``layout_seed``. ``simulator``: env keys of another simulator than Meta-World
    (``env_type`` libero with its ``suite``, or maniskill). ``imagine``: a world-model env config (a job's
    ``env.train``); the policy then plays each episode in that world model and the simulator replays its actions."""
    from policy_and_value.envs.registry import make_env

    num_envs = min(num_envs, len(tasks) * episodes_per_task)  # no env runs an episode that is not kept
    num_envs = max(len(tasks), num_envs - num_envs % len(tasks))
    cfg = env_config(
        env_type="metaworld", tasks=tasks, num_envs=num_envs, num_action_chunks=1, max_episode_steps=max_episode_steps,
        auto_reset=False, cameras=cameras, image_size=image_size, use_images=use_images, layout_seed=layout_seed,
    )  # fmt: skip
    if simulator is not None:
        cfg = derive_env(cfg, {"state_type": "proprio", "reward_signal": "success", **simulator})
    env = make_env(cfg, num_envs, seed=seed)
    if policy_dir:
        actor = PolicyActor(policy_dir, noise_level, seed)
        if imagine:
            try:
                actor = ImaginedPlanActor(actor, imagine, env_task_names(env), max_episode_steps, seed)
            except BaseException:  # a config or task mismatch: close the simulator before stopping
                env.close()
                raise
    else:
        actor = PrivilegedExpertActor(env) if simulator else ExpertActor(tasks, env.task_ids)
    rng = np.random.default_rng(seed)
    done_per_task: dict[str, int] = defaultdict(int)
    stats: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    try:
        while min(done_per_task[t] for t in tasks) < episodes_per_task:
            obs, info = env.reset()
            actor.reset()
            forced = rng.random(num_envs) < fail_fraction
            frames = [[obs["images"][i].numpy()] if use_images else [] for i in range(num_envs)]
            states = [[obs["state"][i].numpy()] for i in range(num_envs)]
            acts, rews, succ = ([[] for _ in range(num_envs)] for _ in range(3))
            alive = np.ones(num_envs, dtype=bool)
            while alive.any():
                a = actor(obs)
                a = a + rng.normal(0.0, action_noise, a.shape) if action_noise > 0 else a
                a = np.where(forced[:, None], rng.uniform(-1, 1, a.shape), a)
                a = np.clip(a, -1, 1).astype(np.float32)
                obs, r, te, tr, _ = env.chunk_step(torch.from_numpy(a)[:, None])
                for i in np.nonzero(alive)[0]:
                    acts[i].append(a[i])
                    rews[i].append(float(r[i, 0]))
                    succ[i].append(bool(te[i]))
                    states[i].append(obs["state"][i].numpy())
                    if use_images:
                        frames[i].append(obs["images"][i].numpy())
                alive &= ~(te | tr).numpy()
            for i in range(num_envs):
                task = tasks[env.task_ids[i]]
                if done_per_task[task] >= episodes_per_task:
                    continue
                done_per_task[task] += 1
                success_once = bool(any(succ[i]))
                stats[task].append((success_once, bool(forced[i])))
                if writer is not None:
                    meta = {
                        "prompt": env.prompts[i], "task": task, "task_id": tasks.index(task), "cameras": cameras,
                        "image_size": image_size, "success_once": success_once, "policy": actor.name,
                        "noise_level": noise_level if policy_dir else None, "action_noise": action_noise,
                        "forced_failure": bool(forced[i]), "reset_state_id": int(info["reset_state_ids"][i]), "seed": seed,
                    }  # fmt: skip
                    if isinstance(actor, ImaginedPlanActor):
                        meta.update(actor.plan_meta(i))
                    writer.write(
                        Episode(
                            np.stack(frames[i])
                            if use_images
                            else np.zeros((len(states[i]), 0, 0, 0, 3), np.uint8),
                            np.stack(states[i]),
                            np.stack(acts[i]),
                            np.array(rews[i]),
                            np.array(succ[i]),
                            meta,
                        )  # fmt: skip
                    )
            log(f"collected {dict(done_per_task)}")
    finally:
        env.close()
    summary = {}
    for task in tasks:
        rows = stats[task]
        acted = [s for s, f in rows if not f]  # by the expert (or policy), not forced to fail
        summary[task] = {
            "episodes": len(rows),
            "success_rate": float(np.mean([s for s, _ in rows])) if rows else 0.0,
            "expert_episodes": len(acted),
            "expert_success_rate": float(np.mean(acted)) if acted else float("nan"),
            "forced_failures": sum(f for _, f in rows),
        }
    return summary


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog=tool_prog("toolkits.collect_episodes"), description=__doc__.splitlines()[0]
    )
    p.add_argument("--tasks", nargs="+", help="Meta-World task names (MT50), e.g. reach-v3 push-v3")
    p.add_argument(
        "--suite", choices=["MT10", "MT50", *SUITES],
        help="all tasks of a Meta-World suite instead of --tasks; a LIBERO suite or maniskill (its --tasks, or all)",
    )  # fmt: skip
    p.add_argument("--episodes-per-task", type=int, default=10)
    p.add_argument("--out", required=True, help="dataset folder to create")
    p.add_argument("--cameras", nargs="+", default=None, help="default: corner (LIBERO: both of its cameras)")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--action-noise", type=float, default=0.0)
    p.add_argument("--fail-fraction", type=float, default=0.0)
    p.add_argument(
        "--max-episode-steps", type=int, default=None, help="default: 150 (LIBERO: the suite's limit)"
    )
    p.add_argument("--num-envs", type=int, default=10, help="episodes run in parallel")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy-dir", default=None, help="a pi0 policy directory to act instead of the experts")
    p.add_argument("--noise-level", type=float, default=0.0, help="its flow-SDE noise (0: deterministic)")
    p.add_argument("--layout-seed", type=int, default=0, help="which 50 layouts per task (env.*.layout_seed)")
    p.add_argument(
        "--start-states", choices=["all", "train", "heldout"], default="all",
        help="LIBERO: each task's 50 init states, the first 25 (train) or the last 25 (heldout)",
    )  # fmt: skip
    p.add_argument(
        "--imagine", nargs="+", default=None, metavar=("CONFIG", "KEY=VALUE"),
        help="with --policy-dir: the policy plays each episode in the world model of this job config "
        "(env.train, with the overrides given after it) and Meta-World replays its actions",
    )  # fmt: skip
    args = p.parse_args(argv)
    args.simulator = None  # Meta-World
    if args.suite in SUITES:
        _suite_args(args)
    else:
        if bool(args.tasks) == bool(args.suite):
            p.error("give exactly one of --tasks and --suite")
        args.tasks = list(MT10_TASKS if args.suite == "MT10" else MT50_TASKS) if args.suite else args.tasks
        args.cameras = args.cameras or ["corner"]
        args.max_episode_steps = args.max_episode_steps or 150
        _exit_on_first_bad([
            ("--tasks", [t for t in args.tasks if t not in MT50_TASKS], "Meta-World MT50 task names like reach-v3"),
            ("--start-states", [args.start_states] if args.start_states != "all" else [],
             "all with Meta-World (a LIBERO suite's init states; Meta-World's layouts: --layout-seed)"),
            ("--cameras", [c for c in args.cameras if c not in CAMERAS], ", ".join(CAMERAS)),
        ])  # fmt: skip
    _exit_on_first_bad(_shared_checks(args))
    return args


def _shared_checks(args: argparse.Namespace) -> list[tuple[str, list, str]]:
    """The checks of the arguments every simulator takes: (flag, [the bad value] or [], what is allowed)."""
    return [
        ("--episodes-per-task", [args.episodes_per_task] if args.episodes_per_task < 1 else [], "an integer >= 1"),
        ("--image-size", [args.image_size] if not 8 <= args.image_size <= 512 else [], "8..512"),
        ("--action-noise", [args.action_noise] if args.action_noise < 0 else [], "a std >= 0"),
        ("--fail-fraction", [args.fail_fraction] if not 0 <= args.fail_fraction <= 1 else [], "a share in [0, 1]"),
        ("--max-episode-steps", [args.max_episode_steps] if args.max_episode_steps < 1 else [], "an integer >= 1"),
        ("--num-envs", [args.num_envs] if args.num_envs < 1 else [], "an integer >= 1"),
        ("--layout-seed", [args.layout_seed] if args.layout_seed < 0 else [], "an integer >= 0"),
        ("--noise-level", [args.noise_level] if args.noise_level < 0 else [], "a flow-SDE noise level >= 0"),
        (
            "--policy-dir",
            [args.policy_dir]
            if args.policy_dir and not os.path.isfile(os.path.join(args.policy_dir, "config.json"))
            else [],
            "a pi0 policy directory (with config.json)",
        ),
        (
            "--noise-level",
            [args.noise_level] if args.noise_level > 0 and not args.policy_dir else [],
            "0 without --policy-dir (it is the policy's sampling noise)",
        ),
        (
            "--imagine",
            [args.imagine[0]] if args.imagine and not args.policy_dir else [],
            "with --policy-dir only (the policy plays in the world model)",
        ),
    ]  # fmt: skip


def _exit_on_first_bad(checks: list[tuple[str, list, str]]) -> None:
    for name, bad, allowed in checks:
        if bad:
            print(f"error: {name}={bad[0]}: allowed: {allowed}", file=sys.stderr)
            sys.exit(2)


def _suite_args(args: argparse.Namespace) -> None:
    """A LIBERO suite or maniskill: its tasks (all by default), cameras, step limit and (LIBERO) init states; the
    LIBERO expert is LIBERO-Object's only, and a policy acts in LIBERO, not yet in ManiSkill."""
    from policy_and_value.envs.suites import suite

    try:
        facts = suite(args.suite)
    except ImportError as err:
        print(f"error: --suite={args.suite}: {err}", file=sys.stderr)
        sys.exit(2)
    libero = args.suite in LIBERO_SUITES
    args.simulator = {**facts.env_keys, **({"start_states": args.start_states} if libero else {})}
    args.tasks = args.tasks or facts.tasks
    args.cameras = args.cameras or list(facts.cameras)
    args.max_episode_steps = args.max_episode_steps or facts.step_limit(args.tasks)
    _exit_on_first_bad([
        ("--tasks", [t for t in args.tasks if t not in facts.tasks], facts.tasks_allowed),
        ("--cameras", [c for c in args.cameras if c not in facts.cameras], ", ".join(facts.cameras)),
        ("--suite", [args.suite] if libero and args.suite != "libero_object" and not args.policy_dir else [],
         "libero_object (the scripted expert is LIBERO-Object's pick-and-place)"),
        ("--policy-dir", [args.policy_dir] if args.policy_dir and not libero else [], "none yet with --suite maniskill"),
        ("--start-states", [args.start_states] if args.start_states != "all" and not libero else [],
         "all with --suite maniskill (its layouts: --layout-seed)"),
        ("--imagine", [args.imagine[0]] if args.imagine and not libero else [], "Meta-World or a LIBERO suite"),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    world = None
    if args.imagine:  # the job config's world-model env, read (and checked) before any episode
        from policy_and_value.config import load_config

        # composed for the policy that plays (--policy-dir), not the job's own rollout.model_dir; overrides after win
        world = load_config(
            args.imagine[0], [f"rollout.model_dir={args.policy_dir}", *args.imagine[1:]]
        ).env.train
        _exit_on_first_bad([("--imagine", [args.imagine[0]] if world.env_type != "world_model" else [],
                             "a job config whose env.train is a world_model env")])  # fmt: skip
    start = time.time()
    writer = EpisodeWriter(
        args.out, info={k: v for k, v in vars(args).items() if k not in ("suite", "simulator")}
    )
    summary = collect(
        args.tasks, args.episodes_per_task, args.cameras, args.image_size, args.action_noise, args.fail_fraction,
        args.max_episode_steps, args.seed, args.num_envs, writer=writer, policy_dir=args.policy_dir,
        noise_level=args.noise_level, layout_seed=args.layout_seed,
        simulator=args.simulator, imagine=world,
    )  # fmt: skip
    writer.close(summary)
    acted = "policy success" if args.policy_dir else "expert success"
    print(f"\n{'task':28s} {'episodes':>8s} {'success':>8s} {acted:>15s} {'forced fail':>11s}")
    for task, s in summary.items():
        print(
            f"{task:28s} {s['episodes']:8d} {s['success_rate']:8.0%} {s['expert_success_rate']:15.0%} {s['forced_failures']:11d}"
        )
    print(f"\nwrote {len(writer.index['episodes'])} episodes to {args.out} in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
