"""Train the dynamics model on collected episodes: the video VAE first, then the denoiser (VAE frozen).

    python -m world_models.train [world_model/ltx_tiny] data.path=data/mt10 output_dir=logs/wm \\
        train.vae_steps=1000 train.dynamics_steps=3000

Runs through ``accelerate`` (``accelerate launch -m world_models.train ...`` for several GPUs; a plain
``python -m`` runs one process). Held-out episodes give a validation loss; TensorBoard logs, atomic
checkpoints (model directory + optimiser, step and RNG state) and automatic resume live in
``output_dir``; the final model is ``<output_dir>/model``, the directory ``env.dynamics_model_config``
takes.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

from policy_and_value.config.data_checks import check_episode_data
from toolkits.base.errors import config_error as _fail
from toolkits.base.setting import check_state_input
from toolkits.base.tensors import tensors_to
from world_models.config import WorldModelJob

MODEL_DIR = "model"
CHECKPOINTS = "checkpoints"


def check_job(job: WorldModelJob) -> None:
    """Paths, tasks and model keys, one line each, before data is loaded."""
    from world_models.dynamics_config import make_config

    check_state_input(job.setting, job.data.state_type)
    check_episode_data(job.data.path, job.data.tasks)
    if job.init_model_dir is not None and not os.path.isfile(os.path.join(job.init_model_dir, "config.json")):
        raise _fail("init_model_dir", job.init_model_dir, "not a dynamics model directory (no config.json)")
    try:
        make_config(job.preset, **{"state_dim": 1, **job.model})  # the state size comes from the data
    except (TypeError, ValueError) as err:
        raise _fail("model", job.model, str(err)) from None


def train_world_model(job: WorldModelJob, log=print) -> Path:
    """Train both stages and write ``<output_dir>/model``; returns that directory."""
    from accelerate import Accelerator

    from policy_and_value.envs.metaworld_tasks import select_state
    from toolkits.base.checkpoint import commit, load_runner_state, save_runner_state, temp_dir_for
    from toolkits.base.lr_schedule import warmup_cosine_lambda
    from toolkits.base.metric_logger import MetricLogger
    from toolkits.base.model_dir import replace_dir_atomically
    from toolkits.base.seeding import get_rng_state, seed_everything, set_rng_state
    from toolkits.episodes import EpisodeDataset, split_episodes
    from world_models.data import ChunkTransitions
    from world_models.dynamics_config import make_config, with_overrides
    from world_models.dynamics_model import DynamicsModel

    check_job(job)
    seed_everything(job.train.seed)
    accelerator = Accelerator(mixed_precision=job.train.mixed_precision, cpu=not torch.cuda.is_available())
    episodes = EpisodeDataset(job.data.path, tasks=job.data.tasks)
    train_ids, held_ids = split_episodes(episodes.entries, job.data.holdout_fraction, job.train.seed)
    out = Path(job.output_dir)
    latest = out / CHECKPOINTS / "latest"
    resume_from = out / CHECKPOINTS / latest.read_text().strip() if job.resume and latest.is_file() else None
    init_has_delta_stats = False
    if resume_from is not None:
        model = DynamicsModel.from_pretrained(resume_from / MODEL_DIR)
    elif job.init_model_dir:  # its weights, its config with job.model's overrides (e.g. predict_delta)
        init = DynamicsModel.from_pretrained(job.init_model_dir)
        model = DynamicsModel(with_overrides(init.cfg, **job.model))
        model.load_state_dict(init.state_dict())
        init_has_delta_stats = init.cfg.predict_delta
    else:
        first = episodes[train_ids[0]]
        state_dim = select_state(first.state, job.data.state_type).shape[1]
        prompts = sorted({e["prompt"] for e in episodes.entries})
        fields = {"num_views": first.images.shape[1], "image_size": first.images.shape[2], "action_dim": first.actions.shape[1],
                  "state_dim": state_dim, "prompts": prompts, **job.model}  # fmt: skip
        model = DynamicsModel(make_config(job.preset, **fields))
    cfg = model.cfg

    def transitions(ids: list[int]) -> ChunkTransitions:
        return ChunkTransitions(
            episodes, ids, cfg.history_frames, cfg.future_frames, cfg.action_chunk, job.data.state_type
        )

    data = transitions(train_ids)
    held = transitions(held_ids) if held_ids else None
    vae_params = [p for n, p in model.named_parameters() if n.startswith("vae.")]
    dyn_params = [p for n, p in model.named_parameters() if not n.startswith("vae.")]
    vae_opt = torch.optim.AdamW(vae_params, lr=job.train.vae_lr, weight_decay=job.train.weight_decay)
    dyn_opt = torch.optim.AdamW(dyn_params, lr=job.train.lr, weight_decay=job.train.weight_decay)
    total = job.train.vae_steps + job.train.dynamics_steps
    schedule = warmup_cosine_lambda(job.train.warmup_steps, max(1, job.train.dynamics_steps), 0.1)
    dyn_sched = torch.optim.lr_scheduler.LambdaLR(dyn_opt, schedule)
    step = 0
    if resume_from is not None:
        step, state = load_runner_state(str(resume_from))
        vae_opt.load_state_dict(state["vae_opt"])
        dyn_opt.load_state_dict(state["dyn_opt"])
        dyn_sched.load_state_dict(state["dyn_sched"])
        set_rng_state(state["rng"])
        log(f"world model: resumed from {resume_from} at step {step}")
    model, vae_opt, dyn_opt = accelerator.prepare(model, vae_opt, dyn_opt)
    core = accelerator.unwrap_model(model)
    logger = (
        MetricLogger(str(out), ["tensorboard"], "worldrl", "world_model", job.model_dump())
        if accelerator.is_main_process
        else None
    )
    log(f"world model: {len(data)} transitions from {len(train_ids)} episodes, {len(held_ids)} held out; "
        f"{sum(p.numel() for p in core.parameters()) / 1e6:.2f}M parameters")  # fmt: skip

    def save(at: int) -> None:
        if not accelerator.is_main_process:
            return
        final = str(out / CHECKPOINTS / f"step_{at}")
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = temp_dir_for(final)
        core.save_pretrained(os.path.join(tmp, MODEL_DIR))
        state = {"vae_opt": vae_opt.state_dict(), "dyn_opt": dyn_opt.state_dict(), "dyn_sched": dyn_sched.state_dict(),
                 "rng": get_rng_state()}  # fmt: skip
        save_runner_state(tmp, at, state)
        commit(tmp, final)

    def fit_statistics() -> None:
        """Once the VAE is final: latent statistics (when it was trained here) and latent-change statistics."""
        gen = torch.Generator().manual_seed(job.train.seed)  # the same sample on every process
        if job.train.vae_steps > 0:
            core.fit_latent_stats(data.frames[torch.randperm(len(data.frames), generator=gen)[:512]])
        if core.cfg.predict_delta:
            part = data.batch(torch.randperm(len(data), generator=gen)[:512])
            core.fit_delta_stats(part["history_images"], part["future_images"])

    if step == 0 and job.train.vae_steps == 0 and not init_has_delta_stats:
        fit_statistics()  # a given VAE (init_model_dir): only the change statistics, unless already fitted
    start = time.time()
    while step < total:
        stage = "vae" if step < job.train.vae_steps else "dynamics"
        idx = torch.randint(0, len(data), (job.train.batch_size,))
        batch = data.batch(idx)
        model.train()
        if stage == "vae":
            frames = torch.cat([batch["history_images"][:, -1:], batch["future_images"]], dim=1)
            losses = core.vae_loss(frames.to(accelerator.device))
            opt, params = vae_opt, vae_params
        else:
            core.vae.requires_grad_(False)
            losses = core.training_loss(**tensors_to(batch, accelerator.device))
            opt, params = dyn_opt, dyn_params
        loss = losses["loss"]
        opt.zero_grad(set_to_none=True)
        accelerator.backward(loss)
        grad_norm = accelerator.clip_grad_norm_(params, job.train.clip_grad)
        opt.step()
        if stage == "dynamics":
            dyn_sched.step()
        step += 1
        if stage == "vae" and step == job.train.vae_steps:
            fit_statistics()
        if logger is not None and (step % job.train.log_interval == 0 or step == total):
            metrics = {f"world_model/{stage}/{k}": float(v.detach()) for k, v in losses.items()}
            metrics[f"world_model/{stage}/grad_norm"] = float(grad_norm)
            metrics["world_model/transitions_per_s"] = step * job.train.batch_size / (time.time() - start)
            if (
                held is not None
                and stage == "dynamics"
                and (step % job.train.save_interval == 0 or step == total)
            ):
                metrics["world_model/dynamics/heldout_loss"] = heldout_loss(core, held, accelerator.device)
            logger.log(metrics, step)
            log(
                f"world model {stage} step {step}/{total}: "
                + ", ".join(f"{k.split('/')[-1]}={v:.4g}" for k, v in metrics.items())
            )
        if step % job.train.save_interval == 0 or step == total:
            save(step)
    if logger is not None:
        logger.close()
    if accelerator.is_main_process:
        replace_dir_atomically(out / MODEL_DIR, core.save_pretrained)
        log(f"world model written to {out / MODEL_DIR}")
    return out / MODEL_DIR


@torch.no_grad()
def heldout_loss(model, held, device, samples: int = 64, batch_size: int = 16) -> float:
    """Denoising loss on held-out transitions with fixed noise (the model's ``generator`` argument)."""
    gen = torch.Generator().manual_seed(0)
    index = torch.randperm(len(held), generator=gen)[:samples]
    total, count = 0.0, 0
    model.eval()
    for part in index.split(batch_size):
        losses = model.training_loss(
            **tensors_to(held.batch(part), device), generator=torch.Generator().manual_seed(1)
        )
        total += float(losses["loss"]) * len(part)
        count += len(part)
    model.train()
    return total / count


def main(argv: list[str] | None = None) -> int:
    """CLI: compose ``configs/<CONFIG>.yaml`` (default ``world_model/ltx_tiny``) with overrides, train."""
    from toolkits.base.cli import job_cli

    return job_cli(argv, "world_model/ltx_tiny", WorldModelJob, check_job, train_world_model, __doc__)


if __name__ == "__main__":
    sys.exit(main())
