"""The online-finetuning service end to end with the robot stand-in: version 1 serves and records episodes, the
improver publishes version 2 by itself, the clients go on with version 2; both versions' success, the episodes
recorded, real env steps and wall time.

    .venv/bin/python benchmarks/online_loop.py [--policy-dir assets/metaworld_obs/policy] [--episodes 20] \\
        [--rounds 1] [--sft-steps 300] [--eval-episodes 20] [--out logs/online_loop] \\
        [--method imagination [--rl-config rl_release] [--rl-steps 10] [--refit-steps 300] \\
        [--max-heldout-loss-ratio 1.5] [--anchor-coef 1.0] [--rl-override K=V]]

One process: a ``PolicyServer`` following a new registry (version 1: ``--policy-dir``) and recording; robot clients
(``toolkits.deploy.robot_client``, openpi's own client, Meta-World on the served layouts, ``layout_seed`` 0) play
``--episodes`` per task; the improver (``worldrl improve``'s ``Improver``; filtered imitation of the successes, or with
``--method imagination`` a warm refit of the observation world model on the recordings and ``rl_release`` in it; gate
on held-out recordings and on Meta-World success on unseen layouts, ``layout_seed`` 1) runs its round and publishes;
the server swaps between episodes and the clients play ``--episodes`` more per task. Each version's success is
measured twice: on the episodes it served (from the recordings, by ``policy_version``) and in-process on
``--eval-episodes`` per task of the unseen layouts (the same layouts and noise draws for both). Every serving phase
plays the same layouts, so the versions' served success is compared on them too.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def served_success(recordings: str) -> dict[int, dict[str, float]]:
    """Per version: episodes, mean success and env steps of the recorded episodes it served."""
    from toolkits.episodes import EpisodeDataset

    out: dict[int, dict[str, float]] = {}
    for entry in EpisodeDataset(recordings).entries:
        row = out.setdefault(entry["policy_version"], {"episodes": 0, "successes": 0, "steps": 0})
        row["episodes"] += 1
        row["successes"] += bool(entry.get("success_once"))
        row["steps"] += entry["length"]
    for row in out.values():
        row["success"] = row["successes"] / row["episodes"]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy-dir", default=str(REPO / "assets" / "metaworld_obs" / "policy"))
    p.add_argument("--episodes", type=int, default=20, help="served episodes per task before and after")
    p.add_argument("--rounds", type=int, default=1, help="improver rounds (each after --episodes per task)")
    p.add_argument("--method", choices=["imitation", "imagination"], default="imitation")
    p.add_argument("--sft-steps", type=int, default=300, help="--method imitation")
    p.add_argument(
        "--rl-config", default="rl_release", help="--method imagination: the RL job run in the world model"
    )
    p.add_argument("--rl-steps", type=int, default=10, help="--method imagination: the RL job's steps")
    p.add_argument("--anchor-coef", type=float, default=0.0, help="--method imagination: imitation anchor")
    p.add_argument(
        "--rl-override", action="append", default=[], help="--method imagination: a key=value of RL"
    )
    p.add_argument(
        "--refit-steps", type=int, default=300, help="--method imagination: world-model refit steps"
    )
    p.add_argument(
        "--max-heldout-loss-ratio",
        type=float,
        default=None,
        help="the gate's bound (default: 1.0 for imitation, 1.5 for imagination: RL moves away)",
    )
    p.add_argument("--eval-episodes", type=int, default=20, help="per task, unseen layouts, each version")
    p.add_argument("--num-envs", type=int, default=6)
    p.add_argument("--out", default="logs/online_loop")
    args = p.parse_args(argv)
    ratio = args.max_heldout_loss_ratio
    if ratio is None:
        ratio = 1.5 if args.method == "imagination" else 1.0

    from toolkits.deploy.policy_source import RegistryFollower
    from toolkits.deploy.registry import PolicyRegistry
    from toolkits.deploy.robot_client import run_served_episodes
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread
    from toolkits.deploy.served import ServedPolicy
    from toolkits.online.config import ImproverConfig
    from toolkits.online.improver import Improver

    start, out = time.time(), Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    reg = PolicyRegistry.create(out / "registry")
    reg.publish_directory(args.policy_dir, source={"note": "version 1 of the online loop"})
    tasks = list(json.loads((Path(args.policy_dir) / "deploy.json").read_text())["prompts"])
    recordings = str(out / "recordings")
    follower = RegistryFollower(reg, lambda d: ServedPolicy(d, seed=0), interval=0.5)
    cfg = ImproverConfig.model_validate({
        "registry": str(reg.root), "recordings": recordings, "work_dir": str(out / "improver"),
        "min_new_episodes": args.episodes * len(tasks), "holdout_every": 5, "once": True, "method": args.method,
        "imagination": {"rl_config": args.rl_config, "rl_overrides": [f"runner.max_steps={args.rl_steps}", *args.rl_override], "refit_steps": args.refit_steps,
                        "anchor_coef": args.anchor_coef},
        "sft_overrides": [f"train.max_steps={args.sft_steps}", "train.warmup_steps=10",
                          f"train.save_interval={args.sft_steps}"],
        "gate": {"eval_tasks": tasks, "eval_episodes": args.eval_episodes, "eval_layout_seed": 1,
                 "min_success_gain": 0.0, "max_heldout_loss_ratio": ratio},
    })  # fmt: skip
    timings = {}
    with ServerThread(PolicyServer(follower, port=0, record=recordings)) as thread:
        for number in range(args.rounds + 1):
            t0 = time.time()
            # every phase plays the same layouts: the versions' served success is compared on them
            run_served_episodes("127.0.0.1", thread.server.port, tasks, args.episodes, num_envs=args.num_envs,
                                seed=1000, layout_seed=0)  # fmt: skip
            timings[f"serve {number + 1}"] = time.time() - t0
            if number == args.rounds:
                break
            t0 = time.time()
            record = Improver(cfg, log=print).round_if_ready()
            timings[f"improve {number + 1}"] = time.time() - t0
            print(f"round {number + 1}: {json.dumps(record)}", flush=True)
            deadline = time.time() + 30
            while follower.version != reg.current() and time.time() < deadline:
                time.sleep(0.2)
    served = served_success(recordings)
    gates = [r.get("gate", {}) for r in Improver(cfg, log=lambda _: None).state["rounds"]]
    print(f"online loop ({args.method}): {args.policy_dir}, tasks {tasks}, {args.episodes} served episodes a task a "
          "phase")  # fmt: skip
    for version, row in sorted(served.items()):
        print(f"  version {version}: served {row['episodes']} episodes, success {row['success']:.3f}, "
              f"{row['steps']} real env steps")  # fmt: skip
    for i, gate in enumerate(gates, 1):
        if "success_current" in gate:
            print(f"  round {i} gate, unseen layouts ({args.eval_episodes} a task): current "
                  f"{gate['success_current']:.3f} -> candidate {gate['success_candidate']:.3f} "
                  f"({gate['success_gain']:+.3f}); held-out loss ratio {gate.get('heldout_loss_ratio', float('nan')):.3f}; "
                  f"published: {gate['passed']}")  # fmt: skip
        if "imagined_success_current" in gate:
            print(f"  round {i} gate, imagined from held-out recorded starts: current "
                  f"{gate['imagined_success_current']:.3f} -> candidate {gate['imagined_success_candidate']:.3f}")  # fmt: skip
    print("  versions: " + ", ".join(f"{v} (parent {reg.manifest(v).parent})" for v in reg.versions()))
    print(
        "  wall time: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
        + f"; total {time.time() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
