"""What world-model RL adds over imitation, measured in the real simulator.

    .venv/bin/python -m experiments.harness.imagination_gain [--config rl_release_video] [--seeds 0 1 2] [--steps 30] \\
        [--eval-episodes 50] [--no-real-ppo] [--controls withhold shuffle recorded] [--out logs/imagination_gain] \\
        [--arm-name "world model"] [--curve-every N] [key=value ...]

For each seed: the imitation policy (``rollout.model_dir`` of the config) is evaluated in Meta-World;
then the config's job trains it for ``--steps`` steps in the world-model env (pure imagination: zero
real-env steps) and the result is evaluated on the same layouts; then, unless ``--no-real-ppo``, the
same job with Meta-World as the training env (same envs, chunks and batch sizes, hence the same number
of policy updates, the world model's hallucination filters reset) is trained and evaluated; a recipe
that sets ``env.train.env_type`` in its own body (``rl_metaworld_outcome_wm`` and those built on it) would
keep training in imagination there, so it stops before any work and asks for ``--no-real-ppo`` (run its
Meta-World recipe as ``--config`` instead). Every run's config is built and validated for every seed
before the first one trains. ``--controls`` runs the world-model job again per control,
to tell what the imagined advantages add over the rest of the update (offline anchor, self-imitation):
``withhold`` (IL only: ``algorithm.advantage_dropout=1``, every imagined chunk is imitated without an
advantage bin), ``shuffle`` (``ablation.shuffle_advantages=true``: the same advantages handed to
random chunks), ``reverse`` (``ablation.reverse_advantages=true``: the advantages negated, so the
update favours what imagination scored worse; the true arm minus this one is twice what the imagined
advantages contribute) and ``recorded`` (shuffled, and every imagined episode one chunk long, so the policy
only ever acts on recorded frames: neither the imagined frames nor the rewards reach the update).
Evaluation samples with the ODE, over ``--eval-episodes`` per task, its layouts and initial noise both drawn
from seed 1000 + seed (``evaluate_in_metaworld``), so every policy of a seed sees the same layouts and noise draws. Prints success per task (mean and
spread over seeds), real-env steps used during RL and wall time. With ``--curve-every N`` every arm
also saves and evaluates every N steps and a learning-curve table (mean success against steps) follows.
Extra ``key=value`` arguments are overrides for every job; ``--arm-name`` labels the config's own arm (e.g. ``Meta-World`` when the overrides
train it there with ``env@env.train=metaworld_3tasks``). Each run's result is kept in ``OUT/<run>/result.json``
with the resolved config it came from: a rerun with the same ``--out`` reuses every run whose config and
episode count are unchanged, so adding a control or a seed runs only what is new (delete the file to redo one).

The same arms measure RL in the real simulator when the config trains there, e.g. the outcome-driven
recipe: ``--config rl_metaworld_outcome --no-real-ppo --arm-name Meta-World --controls shuffle reverse``
(evaluation then runs on the eval env's ``layout_seed``, layouts training never saw). The real-env steps are
those the real envs' finished training episodes took, every env's in a real-simulator recipe and the real groups'
in mixed training (none in imagination alone).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from toolkits.base.atomic import write_json_atomically

CONTROLS = {  # overrides of each control arm ({chunk}: env.train.num_action_chunks)
    "withhold": ["algorithm.advantage_dropout=1.0"],
    "shuffle": ["ablation.shuffle_advantages=true"],
    "reverse": ["ablation.reverse_advantages=true"],
    "recorded": ["ablation.shuffle_advantages=true", "env.train.max_episode_steps={chunk}"],
}
REAL_ARM = ["env@env.train=metaworld_3tasks"]  # Meta-World as the training env (its world-model keys dropped)


def reuse_or_run(path: str, key: dict[str, Any], run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The record at ``path`` when it was made with this ``key`` (a JSON-able description of the run);
    otherwise ``run()``'s record, written there atomically with the key, so an interrupted benchmark
    keeps every run it finished."""
    key = json.loads(json.dumps(key))  # compare as it reads back
    if os.path.exists(path):
        with open(path) as f:
            record = json.load(f)
        if record.get("key") == key:
            print(f"reusing {path}", flush=True)
            return record
    record = {"key": key, **run()}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_json_atomically(path, record)
    return record


def imitation_key(cfg, episodes: int, seed: int) -> dict[str, Any]:
    """What the imitation policy's evaluation depends on (training overrides do not change it)."""
    return {
        "model": cfg.model.model_dump(mode="json"), "model_dir": cfg.rollout.model_dir,
        "policy_outputs": [cfg.algorithm.logprob_type, cfg.algorithm.reward_type],
        "eval_env": cfg.env.eval.model_dump(mode="json"), "eval_episodes": episodes, "seed": seed,
    }  # fmt: skip


def without_resume(job: list[str]) -> list[str]:
    """``job`` less ``runner.resume_dir``: the imitation start is evaluated, never resumed (a co-evolution's
    resume is checked against its own log dir's rounds, which only the arm's config names)."""
    return [o for o in job if not o.lstrip("+~").startswith("runner.resume_dir=")]


def run_config(config: str, job: list[str], out: str, name: str, real: bool = False):
    """The validated config of training run ``name`` (logged under ``out/name``). ``real``: the real-simulator
    arm, whose env.train (swapped to Meta-World by ``REAL_ARM``) keeps only the keys its env type has, so the
    world-model keys a recipe's body sets (its state model, its filters) are left behind; a recipe that sets
    ``env.train.env_type: world_model`` itself would keep training in imagination, so it stops before any work."""
    from policy_and_value.config import validate_config
    from policy_and_value.config.env_schema import ENV_MODELS
    from toolkits.base.compose import compose_config

    data = compose_config(
        config, [*job, *(REAL_ARM if real else []), f"runner.logger.log_path={out}", f"runner.logger.experiment_name={name}"]
    )  # fmt: skip
    if real:
        train = data["env"]["train"]
        if train.get("env_type") == "world_model":
            raise SystemExit(
                f"--config {config}: its real-simulator arm would still train in the world model (the recipe "
                "sets env.train.env_type itself); add --no-real-ppo and run its Meta-World recipe with --config"
            )
        model = ENV_MODELS.get(train.get("env_type", "metaworld"), ENV_MODELS["metaworld"])
        data["env"]["train"] = {k: v for k, v in train.items() if k in model.model_fields}
    return validate_config(data)


def run_key(cfg, episodes: int, seed: int) -> dict[str, Any]:
    """What a trained arm's result depends on: its whole resolved config and the evaluation."""
    return {"config": cfg.model_dump(mode="json"), "eval_episodes": episodes, "seed": seed}


def eval_policy(cfg, weights: str | None):
    """The config's policy as its eval env sees it, with ``weights`` (a rollout safetensors file) loaded when
    given, else the start (``rollout.model_dir``)."""
    from safetensors.torch import load_file

    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.envs.metaworld_tasks import FULL_STATE_DIM, PROPRIO_DIM
    from policy_and_value.models.registry import make_policy

    ecfg = cfg.env.eval
    spec = EnvSpec(
        action_dim=cfg.model.action_dim or 4,
        num_action_chunks=ecfg.num_action_chunks,
        state_dim=FULL_STATE_DIM if ecfg.state_type == "full" else PROPRIO_DIM,
        image_shape=(len(ecfg.cameras), ecfg.image_size, ecfg.image_size),
        tasks=tuple(ecfg.tasks),
    )
    policy = make_policy(
        cfg.model, spec, cfg.algorithm.logprob_type, cfg.algorithm.reward_type == "action_level",
        model_dir=cfg.rollout.model_dir,
    )  # fmt: skip
    if weights is not None:
        policy.load_state_dict(load_file(weights))
    return policy


def evaluate(cfg, weights: str | None, episodes: int, seed: int) -> dict[str, float]:
    """Real-simulator success per task of the config's policy (``weights``: a rollout safetensors file); its noise
    drawn from the seed, so every policy evaluated with ``seed`` meets the same draws."""
    from policy_and_value.offline.evaluate import evaluate_in_metaworld

    ecfg = cfg.env.eval
    policy = eval_policy(cfg, weights)
    res = evaluate_in_metaworld(
        policy, list(ecfg.tasks), episodes, list(ecfg.cameras), ecfg.image_size, ecfg.state_type,
        ecfg.max_episode_steps, num_envs=3 * len(ecfg.tasks), seed=1000 + seed, layout_seed=ecfg.layout_seed,
    )  # fmt: skip
    return {t: r["success_rate"] for t, r in res.items()}


def train(cfg) -> tuple[list[tuple[int, str]], float, dict[int, int]]:
    """Run the job (its co-evolution rounds when ``coevolution.rounds`` > 0); returns ((step, rollout
    weights) of every checkpoint saved, the last one last; wall seconds; the real-env steps used up to
    each of those checkpoints)."""
    from policy_and_value.runner import run_job
    from toolkits.base.checkpoint import checkpoint_step
    from toolkits.recipes.coevolution import real_env_steps_by_step

    start = time.time()
    if cfg.coevolution.rounds > 0:  # co-evolution: every round's checkpoint, the real steps it used so far
        from toolkits.recipes.coevolution import run_coevolution

        records = run_coevolution(cfg)
        saved = [(r["step"], os.path.join(r["checkpoint"], "rollout", "model.safetensors")) for r in records]
        return saved, time.time() - start, {r["step"]: int(r["real_env_steps_total"]) for r in records}
    runner = run_job(cfg)
    wall = time.time() - start
    by_step = real_env_steps_by_step(cfg.env.train, runner.log_dir)  # the real envs' finished episodes' steps
    used = lambda step: sum(n for s, n in by_step.items() if s <= step)  # noqa: E731
    saved = [(checkpoint_step(d), os.path.join(d, "rollout", "model.safetensors")) for d in runner.saved]
    return saved, wall, {step: used(step) for step, _ in saved}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="rl_release_video")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=30, help="training steps of each RL job")
    p.add_argument("--eval-episodes", type=int, default=50, help="per task")
    p.add_argument(
        "--curve-every", type=int, default=0,
        help="also save and evaluate every N training steps (a learning curve per arm); 0: only the end",
    )  # fmt: skip
    p.add_argument("--no-real-ppo", action="store_true", help="skip the real-simulator arm")
    p.add_argument("--controls", nargs="*", default=[], choices=sorted(CONTROLS), help="ablation arms")
    p.add_argument("--out", default="logs/imagination_gain")
    p.add_argument(
        "--arm-name", default="world model", help="label of the config's own arm (e.g. 'Meta-World' when the "
        "overrides train it there)"
    )  # fmt: skip
    from toolkits.base.cli import parse_with_overrides

    args, overrides = parse_with_overrides(p)  # key=value overrides anywhere among the options

    from policy_and_value.config import load_config

    common = [
        *overrides, f"runner.max_steps={args.steps}", "runner.val_check_interval=-1",
        f"runner.save_interval={args.curve_every or args.steps}", "runner.progress_bar=false",
    ]  # fmt: skip
    main_arm = args.arm_name
    if main_arm in ("imitation", "real simulator") or main_arm.startswith("control: "):
        raise SystemExit(f"--arm-name {main_arm!r}: taken by another arm; pick another label")
    arms = [main_arm, *(f"control: {c}" for c in args.controls), "real simulator"]
    runs: dict[str, list[dict[str, float]]] = {"imitation": [], **{a: [] for a in arms}}
    cost: dict[str, list[tuple[int, float]]] = {a: [] for a in arms}
    curves: dict[str, list[dict[str, dict[str, float]]]] = {a: [] for a in arms}

    def planned_runs(seed: int) -> tuple[Any, list[tuple[str, str, Any]]]:
        """The config of ``seed``'s imitation start and (arm, run name, validated config) of each of its
        runs, the config's own arm first: built for every seed before any work, so a bad override stops
        the benchmark at once instead of after the first arms have trained."""
        job = [*common, f"runner.seed={seed}"]
        cfg = load_config(args.config, without_resume(job))
        if "withhold" in args.controls and cfg.algorithm.train_mode != "IL":
            raise SystemExit("--controls withhold drops IL's advantage bins: add algorithm.train_mode=IL")
        chunk = cfg.env.train.num_action_chunks
        jobs = [(main_arm, f"wm_seed{seed}", job)]
        jobs += [
            (f"control: {c}", f"{c}_seed{seed}", [*job, *(o.format(chunk=chunk) for o in CONTROLS[c])])
            for c in args.controls
        ]
        if not args.no_real_ppo:  # same envs, chunks, batches; real episodes
            jobs.append(("real simulator", f"real_seed{seed}", job))
        planned = [
            (arm, name, run_config(args.config, j, args.out, name, real=arm == "real simulator"))
            for arm, name, j in jobs
        ]
        return cfg, planned

    def run_arm(arm: str, name: str, cfg, seed: int, eval_cfg) -> None:
        """Train ``cfg`` as run ``name`` and evaluate it, or reuse the record of the same run."""

        def run() -> dict[str, Any]:
            saved, wall, steps_at = train(cfg)
            curve = {
                str(step): evaluate(eval_cfg, weights, args.eval_episodes, seed) for step, weights in saved
            }
            return {
                "success": curve[str(saved[-1][0])],
                "curve": curve,
                "wall_s": wall,
                "real_env_steps": steps_at[saved[-1][0]],
                "real_env_steps_at": {str(step): n for step, n in steps_at.items()},
            }

        key = run_key(cfg, args.eval_episodes, seed)
        record = reuse_or_run(os.path.join(args.out, name, "result.json"), key, run)
        runs[arm].append(record["success"])
        curves[arm].append(record.get("curve", {}))
        cost[arm].append((record["real_env_steps"], record["wall_s"]))
        print(f"seed {seed} {arm}: {record['success']} ({record['wall_s']:.0f} s)", flush=True)

    plans = {seed: planned_runs(seed) for seed in args.seeds}
    for seed, (cfg, planned) in plans.items():
        key = imitation_key(cfg, args.eval_episodes, seed)
        record = reuse_or_run(
            os.path.join(args.out, f"imitation_seed{seed}", "result.json"), key,
            lambda: {"success": evaluate(cfg, None, args.eval_episodes, seed)},  # noqa: B023 (called at once)
        )  # fmt: skip
        runs["imitation"].append(record["success"])
        print(f"seed {seed} imitation: {record['success']}", flush=True)
        for arm, name, run_cfg in planned:
            run_arm(arm, name, run_cfg, seed, cfg)

    tasks = list(runs["imitation"][0])
    names = [n for n in runs if runs[n]]
    print(f"\nreal-simulator success, {args.eval_episodes} episodes per task, seeds {args.seeds} "
          f"(mean ± std over seeds), {args.steps} training steps of train_mode {cfg.algorithm.train_mode}\n")  # fmt: skip
    print("| task | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for task in [*tasks, "mean"]:
        cells = []
        for n in names:
            per_seed = [np.mean(list(r.values())) if task == "mean" else r[task] for r in runs[n]]
            cells.append(f"{100 * np.mean(per_seed):.1f} ± {100 * np.std(per_seed):.1f}")
        print(f"| {task} | " + " | ".join(cells) + " |")
    for n, c in cost.items():
        if c:
            print(
                f"{n}: real-env steps during RL {c[0][0]} per run, wall time {np.mean([w for _, w in c]):.0f} s per run"
            )
    for base in ["imitation", *(f"control: {c}" for c in args.controls)]:
        gain = [np.mean(list(a.values())) - np.mean(list(b.values())) for a, b in zip(runs[main_arm], runs[base])]  # fmt: skip
        print(
            f"{main_arm} - {base}: {100 * np.mean(gain):+.1f} ± {100 * np.std(gain):.1f} points (paired by seed)"
        )
    if args.curve_every:
        print_curves(curves, runs["imitation"])
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(
            {"args": vars(args), "overrides": overrides, "runs": runs, "curves": curves, "cost": cost},
            f,
            indent=1,
        )


def print_curves(
    curves: dict[str, list[dict[str, dict[str, float]]]], imitation: list[dict[str, float]]
) -> None:
    """Mean success over tasks and seeds at every evaluated step, per arm (step 0: the imitation start)."""
    arms = [a for a, c in curves.items() if c and all(c)]
    steps = sorted({int(s) for a in arms for c in curves[a] for s in c})
    start = 100 * np.mean([np.mean(list(r.values())) for r in imitation])
    print("\nmean success (%) over tasks and seeds against training steps\n")
    print("| step | " + " | ".join(arms) + " |\n|---|" + "---|" * len(arms))
    print("| 0 | " + " | ".join(f"{start:.1f}" for _ in arms) + " |")
    for step in steps:
        cells = []
        for a in arms:
            per_seed = [np.mean(list(c[str(step)].values())) for c in curves[a] if str(step) in c]
            cells.append(f"{100 * np.mean(per_seed):.1f} ± {100 * np.std(per_seed):.1f}" if per_seed else "")
        print(f"| {step} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
