"""World-model/policy co-evolution (RLinf's and WoVR's iterative refit) as one job: ``coevolution.rounds``
rounds of

1. RL in imagination for ``steps_per_round`` steps (the job itself, resumed from the last round's
   checkpoint, with the newest state model; env groups of a real simulator may train beside the
   world-model one, mixed training, and their steps count as real env steps);
2. ``real_episodes_per_task`` real rollouts of the current policy (its rollout weights, exported, sampled with
   ``model.pi0.noise_level``) in the eval env's simulator on training's starts (Meta-World's layouts of
   ``layout_seed``; LIBERO's first 25 init states a task, evaluation taking the last 25), and/or
   ``plans_per_task`` of its episodes played in the world model it just trained in, from the simulator's start,
   then replayed open loop there (``round_<r>/plans``: what the actions imagination led it to really do, where
   the model is wrong about this policy; ``toolkits.collect_episodes --imagine``);
3. a warm-started refit of the state model (and its renderer; an observation model in the observation-only
   setting, its success learned from episodes' ends) on its training episodes plus every real episode so far
   (``refit_steps``; ``refit_focus`` of each state-model batch from the rounds' episodes; the renderer's VAE
   latents are cached in ``coevolution/latent_cache`` or ``coevolution.latent_cache``, so a refit encodes only
   the episodes no refit encoded before), and optionally of the dynamics model's denoiser.

The real env steps of every round (the rollouts' and replayed plans' actions; evaluation episodes are measurement and do not
feed training) are counted, printed, logged to TensorBoard (``coevolution/*`` against the training step)
and appended to ``<log_dir>/coevolution/rounds.jsonl`` with the round's evaluation. Each round's policy,
episodes, merged data and models stay under ``<log_dir>/coevolution/round_<r>/``.

``runner.resume_dir`` (a checkpoint of this log dir) continues a co-evolution where it stopped: the rounds
``rounds.jsonl`` records up to the checkpoint's step are kept (their real episodes, step count and last
refitted models), a round that had not finished is redone from that checkpoint, and raising
``coevolution.rounds`` adds rounds to a finished run. A SIGTERM stops at the next step boundary of RL (with
a checkpoint, and the round's real rollouts and refit are skipped) or after the round it arrives in,
raising ``JobStopped``. Without a resume_dir a co-evolution starts anew (``rounds.jsonl`` too).
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from policy_and_value.algorithms.optimizer import scheduled_optimizer_steps
from policy_and_value.config.env_checks import env_groups, world_model_groups
from policy_and_value.config.schema import EnvConfig, JobConfig
from toolkits.base.checkpoint import checkpoint_step, log_dir_of
from toolkits.base.setting import OBSERVATION_ONLY
from toolkits.recipes.coevolution_checks import finished_rounds
from toolkits.recipes.coevolution_refit import refit


def round_config(cfg: JobConfig, r: int, resume: str | None, state_model: str, dynamics: str) -> JobConfig:
    """The job of round ``r`` (0-based): train to step (r + 1) x steps_per_round, save at its end. The lr
    schedule keeps spanning every round's steps (a cosine one would otherwise restart its span each round)."""
    co = cfg.coevolution
    whole = cfg.model_copy(
        update={"runner": cfg.runner.model_copy(update={"max_steps": co.rounds * co.steps_per_round})}
    )
    optim = cfg.actor.optim.model_copy(update={"total_training_steps": scheduled_optimizer_steps(whole)})
    actor = cfg.actor.model_copy(update={"optim": optim})
    runner = cfg.runner.model_copy(
        update={
            "max_steps": (r + 1) * co.steps_per_round,
            "resume_dir": resume,
            "save_interval": co.steps_per_round,
        }
    )
    train = cfg.env.train.model_copy(
        update={"state_model_config": state_model, "dynamics_model_config": dynamics}
    )
    env = cfg.env.model_copy(update={"train": train})
    return cfg.model_copy(update={"runner": runner, "env": env, "actor": actor})


def collect_real(
    cfg: JobConfig,
    policy_dir: str,
    out: str,
    seed: int,
    episodes_per_task: int,
    imagine: EnvConfig | None = None,
) -> dict[str, Any]:
    """Episodes of the policy in ``policy_dir`` in the eval env's simulator with its tasks and views (Meta-World on
    the layouts of ``coevolution.layout_seed``; LIBERO on the training init states, the first 25 a task): its own
    rollouts, or with ``imagine`` (a world-model env config) its episodes planned there and replayed open loop. In
    the observation-only setting the files hold what a robot records (proprioception, the success), as LIBERO's do.
    Returns the number of env steps, episodes and their success rate."""
    from toolkits.collect_episodes import collect
    from toolkits.episodes import EpisodeWriter

    ev = cfg.env.eval
    simulator = None  # Meta-World with its full state and shaped reward (the privileged recipes read them)
    if ev.env_type == "libero":  # as it records: proprioception and the episode's success
        simulator = dict(env_type="libero", suite=ev.suite, start_states="train", state_type=ev.state_type)
    elif cfg.setting == OBSERVATION_ONLY:  # what a robot records: the hand's proprioception and the success
        simulator = dict(env_type="metaworld", state_type="proprio")
    info = {
        "cameras": list(ev.cameras),
        "image_size": ev.image_size,
        "tasks": list(ev.tasks),
        **(simulator or {}),
    }
    writer = EpisodeWriter(out, info=info)
    summary = collect(
        list(ev.tasks), episodes_per_task, list(ev.cameras), ev.image_size, 0.0, 0.0, ev.max_episode_steps, seed,
        ev.num_envs, writer, log=lambda *_: None, policy_dir=policy_dir,
        noise_level=float(cfg.model.pi0.get("noise_level", 0.0)), layout_seed=cfg.coevolution.layout_seed,
        simulator=simulator, imagine=imagine,
    )  # fmt: skip
    writer.close(summary)
    episodes = writer.index["episodes"]
    return {
        "env_steps": sum(int(e["length"]) for e in episodes),
        "episodes": len(episodes),
        "success": sum(bool(e["success_once"]) for e in episodes) / max(1, len(episodes)),
    }


def real_env_steps_by_step(env: EnvConfig, log_dir: str) -> dict[int, int]:
    """The real env steps each training step took in ``env``'s real-simulator envs: the lengths of the episodes
    they finished, as the run logged them (``<log_dir>/metrics.jsonl``; a step logged again after a resume
    counts once, as last logged). Imagined envs take none; an episode still going at the end is not counted."""
    if env.groups:
        keys = [
            f"env/{name}/episode_steps" for name, group in env_groups(env) if group.env_type != "world_model"
        ]
    else:
        keys = [] if env.env_type == "world_model" else ["env/episode_steps"]
    path = os.path.join(log_dir, "metrics.jsonl")
    if not keys or not os.path.isfile(path):
        return {}
    with open(path) as f:
        return {row["step"]: int(sum(row.get(k, 0) for k in keys)) for row in map(json.loads, f)}


def round_data(here: str) -> list[str]:
    """The episode folders a finished round added: its real rollouts and/or its replayed plans."""
    return [os.path.join(here, d) for d in ("episodes", "plans") if os.path.isdir(os.path.join(here, d))]


def collect_round(
    cfg: JobConfig, job: JobConfig, policy: str, here: str, r: int, rl_steps: int
) -> dict[str, Any]:
    """Round ``r``'s real episodes of the exported ``policy``: ``real_episodes_per_task`` rollouts and
    ``plans_per_task`` plans imagined in the world model the round trained in (``job.env.train``). Every
    replayed plan's step is a real env step too, as are the ``rl_steps`` RL took in real env groups."""
    co, seed = cfg.coevolution, cfg.runner.seed * 1000 + r
    real = {"env_steps": 0, "episodes": 0, "success": 0.0}
    plans = dict(real)
    if co.real_episodes_per_task > 0:
        real = collect_real(cfg, policy, os.path.join(here, "episodes"), seed, co.real_episodes_per_task)
    if co.plans_per_task > 0:
        plans = collect_real(
            cfg, policy, os.path.join(here, "plans"), seed + 500, co.plans_per_task,
            imagine=world_model_groups(job.env.train)[0],
        )  # fmt: skip
    return {
        "real_env_steps": real["env_steps"] + plans["env_steps"] + rl_steps,
        "rl_real_env_steps": rl_steps,
        "real_episodes": real["episodes"],
        "real_success": real["success"],
        "plan_episodes": plans["episodes"],
        "plan_success": plans["success"],
    }


def log_round(cfg: JobConfig, log_dir: str, record: dict[str, Any], log=print) -> None:
    """A round's numbers to TensorBoard (``coevolution/*`` at its last training step) and one printed line."""
    from toolkits.base.metric_logger import MetricLogger

    logger_cfg = cfg.runner.logger
    tensorboard = [b for b in logger_cfg.logger_backends if b == "tensorboard"]  # no new wandb/swanlab run
    metrics = MetricLogger(log_dir, tensorboard, logger_cfg.project_name, logger_cfg.experiment_name, {})
    metrics.log(
        {f"coevolution/{k}": float(v) for k, v in record.items() if isinstance(v, int | float)},
        record["step"],
    )
    metrics.close()
    evaluated = f", eval success {record['eval/success_once']:.3f}" if "eval/success_once" in record else ""
    rl = f" ({record['rl_real_env_steps']} in RL's real envs)" if record.get("rl_real_env_steps") else ""
    rollouts = f", real rollouts' success {record['real_success']:.2f}" if record["real_episodes"] else ""
    plans = f", replayed plans' success {record['plan_success']:.2f}" if record.get("plan_episodes") else ""
    log(f"co-evolution round {record['round']}/{cfg.coevolution.rounds}: step {record['step']}, "
        f"{record['real_env_steps']} real env steps{rl} ({record['real_env_steps_total']} in all){rollouts}{plans}"
        f"{evaluated}; state model refitted -> {record['state_model']}")  # fmt: skip


def run_coevolution(cfg: JobConfig, log=print) -> list[dict[str, Any]]:
    """Run every round; returns one record per round (also in ``<log_dir>/coevolution/rounds.jsonl``). The job
    is checked by ``coevolution_checks.check_coevolution`` first (``policy_and_value.train`` does)."""
    from policy_and_value.runner.runner import run_job
    from policy_and_value.runner.stop import JobStopped, stop_on_sigterm
    from toolkits.base.atomic import write_text_atomically
    from toolkits.ckpt_convertor.export_policy import export_policy
    from toolkits.episodes.merge import merge_datasets

    co, log_dir = cfg.coevolution, log_dir_of(cfg)
    root = os.path.join(log_dir, "coevolution")
    os.makedirs(root, exist_ok=True)
    records = finished_rounds(cfg)
    write_text_atomically(os.path.join(root, "rounds.jsonl"), "".join(json.dumps(r) + "\n" for r in records))
    state_model, dynamics = cfg.env.train.state_model_config, cfg.env.train.dynamics_model_config
    if records:  # resumed: the last finished round's models, every finished round's real episodes
        state_model, dynamics = records[-1]["state_model"], records[-1]["dynamics_model"]
    datasets = [
        co.state_model_data,
        *(d for r in records for d in round_data(os.path.join(root, f"round_{r['round']}"))),
    ]
    resume, total = cfg.runner.resume_dir, records[-1]["real_env_steps_total"] if records else 0
    with stop_on_sigterm() as stop:
        for r in range(len(records), co.rounds):
            here = os.path.join(root, f"round_{r + 1}")
            if os.path.isdir(here):  # what an unfinished attempt at this round left: made anew
                shutil.rmtree(here)
            job = round_config(cfg, r, resume, state_model, dynamics)
            start = checkpoint_step(resume) if resume else 0
            runner = run_job(job)
            by_step = real_env_steps_by_step(cfg.env.train, runner.log_dir)
            rl = sum(n for step, n in by_step.items() if start < step <= runner.global_step)
            resume = runner.saved[-1] if runner.saved else resume  # resumed at the round's end: no steps left
            policy = str(export_policy(resume, os.path.join(here, "policy")))
            real = collect_round(cfg, job, policy, here, r, rl)
            datasets.extend(round_data(here))
            merged = os.path.join(here, "data")
            merge_datasets(datasets, merged)
            state_model, dynamics = refit(cfg, merged, state_model, dynamics, here, datasets[1:])
            total += real["real_env_steps"]
            record = {"round": r + 1, "step": runner.global_step, **real, "real_env_steps_total": total,
                      "checkpoint": resume, "state_model": state_model, "dynamics_model": dynamics,
                      **{k: v for k, v in runner.last_eval.items() if k.startswith("eval/")}}  # fmt: skip
            records.append(record)
            with open(os.path.join(root, "rounds.jsonl"), "a") as f:
                f.write(json.dumps(record) + "\n")
            log_round(cfg, log_dir, record, log)
            if stop.requested and r + 1 < co.rounds:
                raise JobStopped(stop.signal_name or "SIGTERM", runner.global_step, resume)
    return records
