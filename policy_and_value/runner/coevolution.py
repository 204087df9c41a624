"""World-model/policy co-evolution (RLinf's and WoVR's iterative refit) as one job: ``coevolution.rounds``
rounds of

1. RL in imagination for ``steps_per_round`` steps (the job itself, resumed from the last round's
   checkpoint, with the newest state model);
2. ``real_episodes_per_task`` real Meta-World rollouts of the current policy (its rollout weights,
   exported, sampled with ``model.pi0.noise_level``) on the training layouts (``layout_seed``);
3. a warm-started refit of the state model (and its renderer) on its training episodes plus every real
   episode so far (``refit_steps``; the renderer's VAE latents are cached in ``coevolution/latent_cache``, so
   a refit encodes only the new episodes), and optionally of the dynamics model's denoiser.

The real env steps of every round (the rollouts' actions; evaluation episodes are measurement and do not
feed training) are counted, printed, logged to TensorBoard (``coevolution/*`` against the training step)
and appended to ``<log_dir>/coevolution/rounds.jsonl`` with the round's evaluation. Each round's policy,
episodes, merged data and models stay under ``<log_dir>/coevolution/round_<r>/``; a round that stops midway
leaves the earlier rounds' checkpoints and models, and ``runner.resume_dir`` plus the last round's models
continue from there. A SIGTERM stops at the next step boundary of RL (with a checkpoint, and the round's
real rollouts and refit are skipped) or after the round it arrives in, raising ``JobStopped``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from policy_and_value.algorithms.lr_schedule import scheduled_optimizer_steps
from policy_and_value.config.schema import JobConfig


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


def collect_real(cfg: JobConfig, policy_dir: str, out: str, seed: int) -> dict[str, Any]:
    """Real rollouts of the policy in ``policy_dir`` with the eval env's tasks and views; returns the
    number of env steps, episodes and their success rate."""
    from toolkits.collect_episodes import collect
    from toolkits.episodes import EpisodeWriter

    ev = cfg.env.eval
    writer = EpisodeWriter(
        out, info={"cameras": list(ev.cameras), "image_size": ev.image_size, "tasks": list(ev.tasks)}
    )
    summary = collect(
        list(ev.tasks), cfg.coevolution.real_episodes_per_task, list(ev.cameras), ev.image_size, 0.0, 0.0,
        ev.max_episode_steps, seed, ev.num_envs, writer, log=lambda *_: None, policy_dir=policy_dir,
        noise_level=float(cfg.model.pi0.get("noise_level", 0.0)), layout_seed=cfg.coevolution.layout_seed,
    )  # fmt: skip
    writer.close(summary)
    episodes = writer.index["episodes"]
    return {
        "real_env_steps": sum(int(e["length"]) for e in episodes),
        "real_episodes": len(episodes),
        "real_success": sum(bool(e["success_once"]) for e in episodes) / max(1, len(episodes)),
    }


def refit(cfg: JobConfig, data: str, state_model: str, dynamics: str, out: str) -> tuple[str, str]:
    """Warm-started refits on ``data``; returns the new state model and dynamics model directories."""
    from world_models.config import StateModelJob, WMDataConfig, WMTrainConfig, WorldModelJob
    from world_models.state_model import StateModelConfig
    from world_models.train import train_world_model
    from world_models.train_state_model import train_state_model

    co, train = cfg.coevolution, cfg.env.train
    renders = bool(StateModelConfig.load(os.path.join(state_model, "config.json")).latent_shape)
    job = StateModelJob.model_validate({
        "data": {"path": data, "tasks": list(train.tasks), "state_type": train.state_type},
        "train": {"steps": co.refit_steps, "seed": cfg.runner.seed},
        "render": {"dynamics_model_dir": dynamics if renders else None, "steps": co.refit_steps,
                   "latent_cache": os.path.join(os.path.dirname(out), "latent_cache")},
        "init_model_dir": state_model, "output_dir": os.path.join(out, "state_model"),
    })  # fmt: skip
    new_state = str(train_state_model(job, log=lambda *_: None))
    if co.dynamics_refit_steps > 0:
        wm_job = WorldModelJob(
            data=WMDataConfig(path=data, tasks=list(train.tasks), state_type=train.state_type),
            train=WMTrainConfig(vae_steps=0, dynamics_steps=co.dynamics_refit_steps, seed=cfg.runner.seed),
            init_model_dir=dynamics, output_dir=os.path.join(out, "dynamics_model"),
        )  # fmt: skip
        dynamics = str(train_world_model(wm_job, log=lambda *_: None))
    return new_state, dynamics


def log_round(cfg: JobConfig, log_dir: str, record: dict[str, Any], log=print) -> None:
    """A round's numbers to TensorBoard (``coevolution/*`` at its last training step) and one printed line."""
    from policy_and_value.runner.metric_logger import MetricLogger

    logger_cfg = cfg.runner.logger
    tensorboard = [b for b in logger_cfg.logger_backends if b == "tensorboard"]  # no new wandb/swanlab run
    metrics = MetricLogger(log_dir, tensorboard, logger_cfg.project_name, logger_cfg.experiment_name, {})
    metrics.log(
        {f"coevolution/{k}": float(v) for k, v in record.items() if isinstance(v, int | float)},
        record["step"],
    )
    metrics.close()
    evaluated = f", eval success {record['eval/success_once']:.3f}" if "eval/success_once" in record else ""
    log(f"co-evolution round {record['round']}/{cfg.coevolution.rounds}: step {record['step']}, "
        f"{record['real_env_steps']} real env steps ({record['real_env_steps_total']} in all), real rollouts' "
        f"success {record['real_success']:.2f}{evaluated}; state model refitted -> {record['state_model']}")  # fmt: skip


def run_coevolution(cfg: JobConfig, log=print) -> list[dict[str, Any]]:
    """Run every round; returns one record per round (also in ``<log_dir>/coevolution/rounds.jsonl``)."""
    from policy_and_value.runner.runner import run_job
    from policy_and_value.runner.stop import JobStopped, stop_on_sigterm
    from toolkits.ckpt_convertor.export_policy import export_policy
    from toolkits.episodes.merge import merge_datasets

    co, logger_cfg = cfg.coevolution, cfg.runner.logger
    log_dir = os.path.abspath(os.path.join(logger_cfg.log_path, logger_cfg.experiment_name))
    root = os.path.join(log_dir, "coevolution")
    os.makedirs(root, exist_ok=True)
    state_model, dynamics = cfg.env.train.state_model_config, cfg.env.train.dynamics_model_config
    datasets, resume, total, records = [co.state_model_data], cfg.runner.resume_dir, 0, []
    with stop_on_sigterm() as stop:
        try:
            for r in range(co.rounds):
                here = os.path.join(root, f"round_{r + 1}")
                runner = run_job(round_config(cfg, r, resume, state_model, dynamics))
                resume = runner.saved[-1]
                policy = str(export_policy(resume, os.path.join(here, "policy")))
                real = collect_real(
                    cfg, policy, os.path.join(here, "episodes"), seed=cfg.runner.seed * 1000 + r
                )
                datasets.append(os.path.join(here, "episodes"))
                merged = os.path.join(here, "data")
                if not os.path.isdir(merged):
                    merge_datasets(datasets, merged)
                state_model, dynamics = refit(cfg, merged, state_model, dynamics, here)
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
        except JobStopped as stopped:  # in RL or after a round: resuming needs the newest state model too
            raise JobStopped(stopped.signal_name, stopped.step, stopped.checkpoint,
                             also=f"env.train.state_model_config={state_model}") from None  # fmt: skip
    return records
