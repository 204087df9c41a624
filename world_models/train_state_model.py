"""Train the state model (``world_models/state_model.py``) on collected episodes: no frames are read.

    python -m world_models.train_state_model [world_model/state_ensemble] data.path=data/policy60 \\
        output_dir=logs/state_model [train.steps=3000] [init_model_dir=DIR [train.parts=reward_head]]

Each member rolls ``train.horizon`` chunks open loop from a window's first state through its own
predictions (so long imagined rollouts are what it is trained for) and regresses every state along the
way; the success head learns Meta-World's success flag from the real states and from the predicted ones.
Members draw their own batches. Held-out episodes give the open-loop error (against "the state stays")
and the success classifier's AUC, printed at the end; the model goes to ``<output_dir>/model``.
``train.parts=reward_head`` trains only the reward head of ``init_model_dir``'s model (added if it has none).
``train.device=auto`` trains on the GPU when one is visible (as the dynamics model's training does), else on
the CPU; the model is written the same either way. No resume (tens of minutes on a CPU, a minute or two on a
GPU): a stopped run leaves the previous model in place.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from policy_and_value.config.data_checks import check_episode_data
from toolkits.base.errors import config_error as _fail
from toolkits.base.setting import OBSERVATION_ONLY, check_state_input, privileged
from toolkits.base.tensors import tensors_to
from world_models.config import StateModelJob
from world_models.state_eval import evaluate, psnr

MODEL_DIR = "model"


def training_device(choice: str) -> torch.device:
    """``train.device``: ``auto`` is the GPU when one is visible, else the CPU (as the dynamics model's
    training picks)."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


def check_job(job: StateModelJob) -> None:
    """Paths and tasks, one line each, before data is loaded."""
    from world_models.latent_cache import check_cache_dir

    check_observation_only(job)
    check_episode_data(job.data.path, job.data.tasks)
    for key, path in (
        ("init_model_dir", job.init_model_dir),
        ("render.dynamics_model_dir", job.render.dynamics_model_dir),
    ):
        if path is not None and not os.path.isfile(os.path.join(path, "config.json")):
            raise _fail(key, path, "not a model directory (no config.json)")
    if job.train.device == "cuda" and not torch.cuda.is_available():
        raise _fail("train.device", "cuda", "no GPU is visible here; use auto or cpu")
    if job.train.parts == "reward_head" and job.init_model_dir is None:
        raise _fail("train.parts", "reward_head", "trains a head on a saved model: set init_model_dir")
    if job.train.parts == "reward_head" and job.render.dynamics_model_dir is not None:
        raise _fail(
            "render.dynamics_model_dir", job.render.dynamics_model_dir,
            "train.parts=reward_head keeps the initial model's renderer: set it to null",
        )  # fmt: skip
    check_cache_dir("render.latent_cache", job.render.latent_cache)
    check_focus(job)


def check_observation_only(job: StateModelJob) -> None:
    """In the observation-only setting the model is an observation model (proprioception and the frames' latents)
    trained on the episodes' outcomes alone, with no reward head: one line naming the key that breaks this."""
    if job.setting != OBSERVATION_ONLY:
        if job.model.latent_components and job.render.dynamics_model_dir is None:
            raise _fail(
                "render.dynamics_model_dir",
                None,
                "model.latent_components needs the VAE that encodes the frames",
            )
        return
    instead = "set model.latent_components (e.g. 64): the state of what the cameras and proprioception record"
    if not job.model.latent_components:
        raise privileged(
            "model.latent_components", 0, "simulator states (the state world model predicts them)", instead
        )
    check_state_input(job.setting, job.data.state_type)
    for key, value, reads, fix in (
        ("train.success_labels", job.train.success_labels, "the simulator's success flag after every action",
         "set train.success_labels=episode_end"),
        ("model.reward_head", job.model.reward_head, "the simulator's shaped reward", "set model.reward_head=false"),
        ("train.parts", job.train.parts, "the simulator's shaped reward", "set train.parts=all"),
    ):  # fmt: skip
        if value not in ("episode_end", False, "all"):
            raise privileged(key, value, reads, fix)
    if job.render.dynamics_model_dir is None:
        raise _fail(
            "render.dynamics_model_dir", None, "an observation model needs the VAE that encodes the frames"
        )


def rollout_losses(model, batch: dict, horizon: int, pos_weight: float) -> dict[str, torch.Tensor]:
    """Open-loop state error over ``horizon`` chunks (in units of each dimension's typical change over
    one chunk), the success classifier's weighted cross-entropy and, with a reward head, its squared error
    (in units of the rewards' std) on real and predicted states."""
    k, n = batch["state"].shape[:2]
    tasks = model.task_one_hot(batch["prompt"]).reshape(k, n, -1)
    chunk = model.cfg.action_chunk
    actions = batch["actions"].reshape(k, n, horizon, chunk, -1)
    state, predicted = batch["state"], []
    for h in range(horizon):
        states = model.rollout_chunk(state, actions[:, :, h], tasks)
        predicted.append(states)
        state = states[:, :, -1]
    pred = torch.cat(predicted, 2)  # [K, N, H*C, S]
    mask = batch["mask"]
    err = ((pred - batch["next_states"]) / model.delta_std).pow(2).mean(-1)
    state_loss = (err * mask).sum() / mask.sum().clamp(min=1)
    weight = mask * batch["labelled"] * (1 + (pos_weight - 1) * batch["success"])
    logits = torch.stack(
        [model.success_logits(batch["next_states"], tasks), model.success_logits(pred.detach(), tasks)]
    )
    target = batch["success"].expand_as(logits)
    bce = F.binary_cross_entropy_with_logits(logits, target, weight=weight.expand_as(logits), reduction="sum")
    success_loss = bce / (2 * weight.sum().clamp(min=1))
    losses = {"state": state_loss, "success": success_loss}
    if model.cfg.value_head:  # the discounted outcome, on real and predicted states of episodes with one
        known = mask * batch["labelled"]
        values = torch.stack(
            [model.value_logits(batch["next_states"], tasks), model.value_logits(pred.detach(), tasks)]
        )
        bce = F.binary_cross_entropy_with_logits(
            values, batch["value"].expand_as(values), weight=known.expand_as(values), reduction="sum"
        )
        losses["value"] = bce / (2 * known.sum().clamp(min=1))
    if model.cfg.reward_head:
        values = torch.stack(
            [model.reward_values(batch["next_states"], tasks), model.reward_values(pred.detach(), tasks)]
        )
        err = ((values - batch["reward"]) / model.reward_std).pow(2)
        losses["reward"] = (err * mask).sum() / (2 * mask.sum().clamp(min=1))
    return losses


@torch.no_grad()
def episode_latents(
    dynamics,
    episodes,
    ids: list[int],
    batch: int = 128,
    cache_dir: str | None = None,
    cache_key: str | None = None,
) -> dict[int, torch.Tensor]:
    """Per episode of ``ids``, the dynamics model's normalised VAE latents of every frame [T, V, C, h, w] (on the
    CPU); with ``cache_dir`` read from there when stored under ``cache_key`` (default: the encoder's fingerprint)."""
    from world_models.latent_cache import cached_latents, encoder_fingerprint

    if cache_dir and cache_key is None:
        cache_key = encoder_fingerprint(dynamics)
    out = {}
    for i in ids:
        images = torch.from_numpy(episodes.read(i, "images"))

        def encode(images: torch.Tensor = images) -> torch.Tensor:
            return torch.cat([dynamics.encode(part[:, None])[:, 0] for part in images.split(batch)]).cpu()

        if cache_dir:
            out[i] = cached_latents(
                cache_dir, cache_key, os.path.join(episodes.root, episodes.entries[i]["file"]), encode
            )
        else:
            out[i] = encode()
    return out


@torch.no_grad()
def encoded_frames(
    dynamics,
    episodes,
    ids: list[int],
    state_type: str,
    batch: int = 128,
    cache_dir: str | None = None,
    cache_key: str | None = None,
) -> dict:
    """Every frame of the episodes ``ids`` as the dynamics model's normalised VAE latents (on the CPU, beside the
    states), with its state; with ``cache_dir`` (``render.latent_cache``) each episode's latents are read from there
    when stored under ``cache_key`` (default: ``encoder_fingerprint(dynamics)``; pass it to hash the VAE once)."""
    from policy_and_value.envs.metaworld_tasks import select_state

    latents, states, prompts, frames = [], [], [], []
    by_episode = episode_latents(dynamics, episodes, ids, batch, cache_dir, cache_key)
    for i in ids:
        images = torch.from_numpy(episodes.read(i, "images"))
        latents.append(by_episode[i])
        states.append(torch.from_numpy(select_state(episodes.read(i, "state"), state_type).astype("float32")))
        prompts += [episodes.entries[i]["prompt"]] * len(images)
        frames.append(images)
    return {
        "latents": torch.cat(latents),
        "states": torch.cat(states),
        "prompts": prompts,
        "frames": torch.cat(frames),
    }


def train_renderer(model, dynamics, episodes, train_ids, held_ids, job: StateModelJob, log=print) -> None:
    """Fit ``model.renderer``: state -> the VAE latents of the frame it shows (mean squared error); report the
    held-out PSNR of its decoded frames against the VAE's own reconstruction (its ceiling)."""
    from toolkits.base.lr_schedule import warmup_cosine_lambda

    if not model.cfg.latent_shape:
        raise SystemExit(
            f"init_model_dir={job.init_model_dir} has no renderer; train a new state model to add one"
        )
    from world_models.latent_cache import encoder_fingerprint

    start = time.time()
    cache = {"cache_dir": job.render.latent_cache}
    if job.render.latent_cache:
        cache["cache_key"] = encoder_fingerprint(dynamics)  # once for the train and held-out frames
    data = encoded_frames(dynamics, episodes, train_ids, job.data.state_type, **cache)
    tasks = model.task_one_hot(data["prompts"])
    states, latents = data["states"].to(model.device), data["latents"].to(model.device)
    log(f"renderer: {len(tasks)} frames encoded ({time.time() - start:.0f} s)")
    params = list(model.renderer.parameters())
    opt = torch.optim.AdamW(params, lr=job.render.lr, weight_decay=job.train.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine_lambda(0, job.render.steps, 0.1))
    model.train()
    for step in range(1, job.render.steps + 1):
        idx = torch.randint(0, len(tasks), (job.render.batch_size,), device=model.device)
        loss = (model.render_latents(states[idx], tasks[idx]) - latents[idx]).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % job.train.log_interval == 0 or step == job.render.steps:
            log(
                f"renderer step {step}/{job.render.steps}: latent mse={loss.item():.4g} ({time.time() - start:.0f} s)"
            )
    model.eval()
    if held_ids:
        with torch.no_grad():
            held = encoded_frames(dynamics, episodes, held_ids, job.data.state_type, **cache)
            pick = torch.randperm(len(held["states"]), generator=torch.Generator().manual_seed(0))[:256]
            rendered = dynamics.decode(
                model.render_latents(
                    held["states"][pick].to(model.device),
                    model.task_one_hot([held["prompts"][i] for i in pick]),
                )[:, None]
            ).cpu()
            recon = dynamics.decode(held["latents"][pick][:, None].to(model.device)).cpu()
            real = held["frames"][pick][:, None]
        log(
            f"renderer, held out: PSNR {psnr(rendered, real):.2f} dB (the VAE's reconstruction: {psnr(recon, real):.2f} dB)"
        )


def episodes_state_dim(episodes, state_type: str) -> int:
    """How many numbers ``state_type`` reads from the episodes' recorded states."""
    from policy_and_value.envs.metaworld_tasks import select_state

    return select_state(episodes.read(0, "state")[:1], state_type).shape[1]


@torch.no_grad()
def report_components(model, dynamics, episodes, held_ids: list[int], latents: dict, log=print) -> None:
    """An observation model's frames: the held-out PSNR of frames decoded from the latents' components against
    the VAE's own reconstruction (its ceiling)."""
    frames = torch.cat([torch.from_numpy(episodes.read(i, "images")) for i in held_ids])
    codes = torch.cat([latents[i] for i in held_ids])
    pick = torch.randperm(len(frames), generator=torch.Generator().manual_seed(0))[:256]
    states = model.observe(torch.zeros(len(pick), model.proprio_dim), codes[pick]).to(model.device)
    tasks = torch.zeros(len(pick), len(model.cfg.prompts), device=model.device)
    rendered = dynamics.decode(model.render_latents(states, tasks)[:, None]).cpu()
    recon = dynamics.decode(codes[pick][:, None].to(model.device)).cpu()
    real = frames[pick][:, None]
    log(f"observation model, held out: frames from its components PSNR {psnr(rendered, real):.2f} dB "
        f"(the VAE's reconstruction: {psnr(recon, real):.2f} dB)")  # fmt: skip


def fit_reward_std(model, data) -> None:
    """Scale a new reward head to the training windows' rewards (it predicts reward / ``reward_std``)."""
    model.reward_std.fill_(float(data.rewards[data.valid > 0].std().clamp(min=1e-6)))


def check_focus(job: StateModelJob) -> None:
    """``train.focus_sources``: datasets the data was merged from, with episodes in the training split."""
    from toolkits.episodes import EpisodeDataset, split_episodes

    if not job.train.focus_fraction:
        return
    if not job.train.focus_sources:
        raise _fail(
            "train.focus_fraction", job.train.focus_fraction, "draws from train.focus_sources: name them"
        )
    entries = EpisodeDataset(job.data.path, tasks=job.data.tasks).entries
    merged = {e.get("merged_from") for e in entries}
    for source in job.train.focus_sources:
        if source not in merged:
            raise _fail("train.focus_sources", source, f"not a dataset {job.data.path} was merged from")
    train_ids, _ = split_episodes(entries, job.data.holdout_fraction, job.train.seed)
    if not any(entries[i].get("merged_from") in job.train.focus_sources for i in train_ids):
        raise _fail(
            "train.focus_sources", job.train.focus_sources, "none of their episodes is in the training split"
        )


def train_state_model(job: StateModelJob, log=print) -> Path:
    """Train and write ``<output_dir>/model``; returns that directory."""
    from toolkits.base.lr_schedule import warmup_cosine_lambda
    from toolkits.base.model_dir import replace_dir_atomically
    from toolkits.base.seeding import seed_everything
    from toolkits.episodes import EpisodeDataset, split_episodes
    from world_models.state_data import StateWindows
    from world_models.state_model import StateModel, StateModelConfig

    check_job(job)
    seed_everything(job.train.seed)
    episodes = EpisodeDataset(job.data.path, tasks=job.data.tasks)
    train_ids, held_ids = split_episodes(episodes.entries, job.data.holdout_fraction, job.train.seed)
    chunk, horizon = job.model.action_chunk, job.train.horizon
    prompts = sorted({e["prompt"] for e in episodes.entries})
    dynamics = None  # the renderer's target latents' model, loaded once (diffusers is imported only for one)
    if job.render.dynamics_model_dir:
        from world_models.dynamics_model import DynamicsModel

        dynamics = DynamicsModel.from_pretrained(job.render.dynamics_model_dir)
    model, latents = None, None
    if job.init_model_dir:
        model = StateModel.from_pretrained(job.init_model_dir).train()
        known = set(model.cfg.prompts)
        if not set(prompts) <= known or model.cfg.action_chunk != chunk:
            raise SystemExit(
                f"init_model_dir={job.init_model_dir}: it knows {sorted(known)} with chunks of "
                f"{model.cfg.action_chunk}; the data has {prompts} and model.action_chunk={chunk}"
            )
        if (model.cfg.latent_components, model.cfg.latent_encoder) != (
            job.model.latent_components,
            job.model.latent_encoder,
        ):
            raise SystemExit(
                f"init_model_dir={job.init_model_dir} keeps {model.cfg.latent_components} latent components "
                f"({model.cfg.latent_encoder}); model.latent_components={job.model.latent_components} "
                f"({job.model.latent_encoder})"
            )
    elif job.model.latent_components:  # an observation model: its state's axes come from the training frames
        cfg = StateModelConfig(
            state_dim=episodes_state_dim(episodes, job.data.state_type) + job.model.latent_components,
            action_dim=len(episodes.read(train_ids[0], "actions")[0]), action_chunk=chunk, prompts=prompts,
            ensemble_size=job.model.ensemble_size, hidden=job.model.hidden, layers=job.model.layers,
            latent_shape=list(dynamics.noise_shape()[1:]), latent_components=job.model.latent_components,
            latent_encoder=job.model.latent_encoder, codec_width=job.model.codec_width,
            value_head=job.model.value_head, value_discount=job.model.value_discount,
        )  # fmt: skip
        model = StateModel(cfg)
    if job.model.latent_components:
        start = time.time()
        latents = episode_latents(dynamics.to(training_device(job.train.device)), episodes, train_ids + held_ids,
                                  cache_dir=job.render.latent_cache)  # fmt: skip
        if model.learned_codec:
            return train_learned(model, job, episodes, train_ids, held_ids, latents, dynamics, log)
        if not job.init_model_dir:
            kept = model.fit_latent_basis(torch.cat([latents[i] for i in train_ids]))
            log(f"state model: {model.cfg.latent_components} components keep {float(kept):.1%} of the latents' variance "
                f"({time.time() - start:.0f} s to encode {sum(len(v) for v in latents.values())} frames)")  # fmt: skip
    features = None
    if latents is not None:
        features = {i: model.latent_coefficients(v).numpy() for i, v in latents.items()}
    windows = dict(chunk=chunk, horizon=horizon, state_type=job.data.state_type, features=features,
                   success_labels=job.train.success_labels, value_discount=job.model.value_discount)  # fmt: skip
    data = StateWindows(episodes, train_ids, **windows)
    held = StateWindows(episodes, held_ids, **windows) if held_ids else None
    focus = data.windows_from(job.train.focus_sources)
    n_focus = round(job.train.focus_fraction * job.train.batch_size)
    if model is not None and job.train.parts == "reward_head" and not model.cfg.reward_head:
        model = model.with_reward_head()
        fit_reward_std(model, data)
    if model is None:
        cfg = StateModelConfig(
            state_dim=data.states.shape[1], action_dim=data.actions.shape[1], action_chunk=chunk, prompts=prompts,
            ensemble_size=job.model.ensemble_size, hidden=job.model.hidden, layers=job.model.layers,
            latent_shape=list(dynamics.noise_shape()[1:]) if dynamics else [], render_hidden=job.render.hidden,
            reward_head=job.model.reward_head, value_head=job.model.value_head,
            value_discount=job.model.value_discount,
        )  # fmt: skip
        model = StateModel(cfg)
    if not job.init_model_dir:
        model.fit_statistics(data.states[data.valid > 0], data.chunk_deltas(chunk))
        if model.cfg.reward_head:
            fit_reward_std(model, data)
    device = training_device(job.train.device)
    model.to(device)
    positives = float((data.success * data.valid).sum())
    labelled = float((data.valid * data.labelled).sum())
    if job.train.success_labels == "episode_end" and not labelled:
        raise SystemExit(f"data.path={job.data.path}: no training episode has an outcome (success_once); the success "
                         "head has nothing to learn")  # fmt: skip
    pos_weight = float((labelled - positives) / max(positives, 1.0))
    if job.train.parts == "reward_head":  # the rest of the model is fixed: no gradients through it
        model.requires_grad_(False)
        model.reward.requires_grad_(True)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=job.train.lr, weight_decay=job.train.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, warmup_cosine_lambda(job.train.warmup_steps, job.train.steps, 0.1)
    )
    k = model.cfg.ensemble_size
    log(f"state model: {len(data)} windows from {len(train_ids)} episodes ({int(positives)} successes), "
        f"{len(held_ids)} held out; {k} members, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, on {device}")  # fmt: skip
    if n_focus:
        log(f"state model: {n_focus} of every {job.train.batch_size} windows from {len(focus)} of "
            f"{', '.join(job.train.focus_sources)}")  # fmt: skip
    start = time.time()
    for step in range(1, job.train.steps + 1):
        index = torch.randint(0, len(data), (k, job.train.batch_size))
        if n_focus:
            index[:, :n_focus] = focus[torch.randint(0, len(focus), (k, n_focus))]
        batch = tensors_to(data.batch(index), device)
        losses = rollout_losses(model, batch, horizon, pos_weight)
        if job.train.parts == "reward_head":
            loss = losses["reward"]
        else:
            loss = losses["state"] + job.train.success_weight * losses["success"] + losses.get("value", 0.0)
            if "reward" in losses:
                loss = loss + job.train.reward_weight * losses["reward"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if step % job.train.log_interval == 0 or step == job.train.steps:
            parts = ", ".join(f"{name}={value.item():.4g}" for name, value in losses.items())
            log(f"state model step {step}/{job.train.steps}: {parts} ({time.time() - start:.0f} s)")
    if job.train.steps:
        took = time.time() - start
        log(
            f"state model: {job.train.steps} steps in {took:.1f} s ({job.train.steps / took:.2f} steps/s) on {device}"
        )
    model.eval()
    if held is not None:
        metrics = evaluate(model, held, horizon)
        log("state model, held out: " + ", ".join(f"{key}={value:.4g}" for key, value in metrics.items()))
    if latents is not None:  # an observation model draws its frames from its state: no renderer to train
        if held_ids:
            report_components(model, dynamics.to(device), episodes, held_ids, latents, log)
    elif dynamics is not None:
        train_renderer(model, dynamics.to(device), episodes, train_ids, held_ids, job, log)
    out = Path(job.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    replace_dir_atomically(out / MODEL_DIR, model.cpu().save_pretrained)
    log(f"state model written to {out / MODEL_DIR}")
    return out / MODEL_DIR


def train_learned(
    model, job: StateModelJob, episodes, train_ids, held_ids, latents, dynamics, log=print
) -> Path:
    """Design B (``model.latent_encoder=learned``): train the code with the dynamics, report it held out, write
    ``<output_dir>/model``."""
    from toolkits.base.model_dir import replace_dir_atomically
    from world_models.train_learned_codec import fit_and_report

    fit_and_report(
        model, job, episodes, train_ids, held_ids, latents, dynamics, training_device(job.train.device), log
    )
    out = Path(job.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    replace_dir_atomically(out / MODEL_DIR, model.cpu().save_pretrained)
    log(f"state model written to {out / MODEL_DIR}")
    return out / MODEL_DIR


def main(argv: list[str] | None = None) -> int:
    """CLI: compose ``configs/<CONFIG>.yaml`` (default ``world_model/state_ensemble``) with overrides, train."""
    from toolkits.base.cli import job_cli

    return job_cli(argv, "world_model/state_ensemble", StateModelJob, check_job, train_state_model, __doc__)


if __name__ == "__main__":
    sys.exit(main())
