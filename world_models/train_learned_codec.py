"""Training of an observation model with a learned code (``model.latent_encoder=learned``, design B), called by
``world_models.train_state_model``: the encoder, the decoder, the dynamics ensemble and the success head learn
together from the episodes' proprioception, the frames' VAE latents, the actions and the outcomes.

Each step takes windows of ``train.horizon`` chunks. The encoder codes the window's first frame and the frame at
each chunk's end; every member rolls the chunks open loop from (proprioception, code) and is scored on the
proprioception after every action and on the code at each chunk's end against the encoder's code of the real frame
(a stop-gradient target, as TD-MPC2's latent consistency). The decoder learns the real frames' latents from the real
codes and from the members' mean predicted codes (so imagined frames are drawn from what imagination predicts), and
keeps the code informative; the success head learns the outcomes on real codes (half its frames the episodes'
successful last frames) and on predicted ones. The encoder learns from the consistency of the start, the decoder
and the success head.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from toolkits.base.tensors import tensors_to

CODE_DELTA = 0.1  # the scale of the dynamics' output for the code's numbers (its typical change over a chunk)


def set_statistics(model, data) -> None:
    """Normalisers: the proprioception's from the data; the code (in (-1, 1)) keeps mean 0, std 1 and a chunk's
    typical change ``CODE_DELTA``."""
    p = model.proprio_dim
    states = data.states[data.valid > 0][:, :p]
    deltas = data.chunk_deltas(model.cfg.action_chunk)[:, :p]
    with torch.no_grad():
        model.state_mean.zero_()
        model.state_std.fill_(1.0)
        model.delta_std.fill_(CODE_DELTA)
        model.state_mean[:p] = states.mean(0)
        model.state_std[:p] = states.std(0).clamp(min=1e-3)
        model.delta_std[:p] = deltas.std(0).clamp(min=1e-6)


def codec_losses(
    model, batch: dict, frames: dict, horizon: int, code_weight: float
) -> dict[str, torch.Tensor]:
    """The losses of one step: ``batch`` windows ([1, B, ...], proprioception followed by the flat latents) and
    ``frames``, single frames for the success head (``latents``, ``proprio``, ``success``, ``prompt``)."""
    k, p, chunk = model.cfg.ensemble_size, model.proprio_dim, model.cfg.action_chunk
    shape = model.cfg.latent_shape
    state, nxt = batch["state"][0], batch["next_states"][0]  # [B, P+L], [B, H*C, P+L]
    b = len(state)
    ends = torch.arange(chunk - 1, horizon * chunk, chunk, device=state.device)
    lat = torch.cat([state[:, None, p:], nxt[:, ends, p:]], 1)  # [B, 1+H, L]
    codes = model.encoder(lat.reshape(-1, *shape)).reshape(b, horizon + 1, -1)
    tasks = model.task_one_hot(batch["prompt"])
    s = torch.cat([state[:, :p], codes[:, 0]], -1)[None].expand(k, -1, -1)
    actions = batch["actions"][0].reshape(b, horizon, chunk, -1)
    predicted = []
    for h in range(horizon):
        path = model.rollout_chunk(s, actions[:, h], tasks)
        predicted.append(path)
        s = path[:, :, -1]
    pred = torch.cat(predicted, 2)  # [K, B, H*C, S]
    mask = batch["mask"][0]
    err = ((pred[..., :p] - nxt[..., :p]) / model.delta_std[:p]).pow(2).mean(-1)
    proprio_loss = (err * mask).sum() / (k * mask.sum().clamp(min=1))
    mask_end = mask[:, ends]
    code_err = (pred[:, :, ends, p:] - codes[:, 1:].detach()).pow(2).mean(-1)
    code_loss = (code_err * mask_end).sum() / (k * mask_end.sum().clamp(min=1))
    real = torch.cat([torch.cat([state[:, None, :p], nxt[:, ends, :p]], 1), codes], -1)  # [B, 1+H, S]
    decoded = model.render_latents(real.reshape(-1, real.shape[-1]), None).reshape(lat.shape)
    decode_loss = (decoded - lat).pow(2).mean()
    imagined = model.render_latents(pred[:, :, ends].mean(0).detach().reshape(-1, real.shape[-1]), None)
    decode_pred = ((imagined.reshape(b, horizon, -1) - lat[:, 1:]).pow(2).mean(-1) * mask_end).sum()
    decode_pred = decode_pred / mask_end.sum().clamp(min=1)
    # the success head: on real single frames (balanced) and on the predicted codes at chunk ends
    f_codes = model.encoder(frames["latents"])
    f_states = torch.cat([frames["proprio"], f_codes], -1)[None].expand(k, -1, -1)
    f_tasks = model.task_one_hot(frames["prompt"])
    logits = model.success_logits(f_states, f_tasks)  # [K, F]
    success_real = F.binary_cross_entropy_with_logits(logits, frames["success"].expand_as(logits))
    labels = batch["success"][0][:, ends]
    weight = mask_end * batch["labelled"][0][:, ends]
    pred_logits = model.success_logits(pred[:, :, ends].detach(), tasks)
    success_pred = F.binary_cross_entropy_with_logits(
        pred_logits, labels.expand_as(pred_logits), weight=weight.expand_as(pred_logits), reduction="sum"
    ) / (k * weight.sum().clamp(min=1))
    losses = {
        "proprio": proprio_loss, "code": code_weight * code_loss, "decode": decode_loss, "decode_pred": decode_pred,
        "success": success_real + success_pred,
    }  # fmt: skip
    if (
        model.cfg.value_head
    ):  # the discounted outcome on the real frames and on the predicted codes at chunk ends
        v_real = model.value_logits(f_states, f_tasks)
        v_pred = model.value_logits(pred[:, :, ends].detach(), tasks)
        losses["value"] = F.binary_cross_entropy_with_logits(
            v_real, frames["value"].expand_as(v_real)
        ) + F.binary_cross_entropy_with_logits(
            v_pred,
            batch["value"][0][:, ends].expand_as(v_pred),
            weight=weight.expand_as(v_pred),
            reduction="sum",
        ) / (k * weight.sum().clamp(min=1))
    return losses


def success_frames(data, count: int, gen: torch.Generator) -> torch.Tensor:
    """Rows of ``data.states`` for the success head: half of them frames labelled successful (the successful
    episodes' last frames), half any labelled valid frame."""
    labelled = (data.valid > 0) & (data.labelled > 0)
    pos = torch.nonzero(labelled & (data.success > 0)).flatten()
    anyone = torch.nonzero(labelled).flatten()
    half = count // 2 if len(pos) else 0
    rows = [anyone[torch.randint(len(anyone), (count - half,), generator=gen)]]
    if half:
        rows.append(pos[torch.randint(len(pos), (half,), generator=gen)])
    return torch.cat(rows)


def frame_batch(model, data, rows: torch.Tensor, device: torch.device) -> dict:
    """Single frames ``rows`` of ``data``: their latents, proprioception, success label (the row's flag: the
    window arrays put the outcome on an episode's last frame's action) and prompt."""
    p = model.proprio_dim
    # the flag of action j is the outcome after it: the state after action j is row j + 1
    states = data.states[rows + 1]
    return tensors_to(
        {
            "latents": states[:, p:].reshape(len(rows), *model.cfg.latent_shape),
            "proprio": states[:, :p],
            "success": data.success[rows],
            "value": data.values[rows],
        },
        device,
    ) | {"prompt": list(data.prompts_of_rows(rows))}


def train_learned_codec(model, job, data, device: torch.device, log=print) -> None:
    """Train every part of ``model`` (a ``latent_encoder: learned`` observation model) on ``data``, windows whose
    states are the proprioception followed by the flat VAE latents of each frame."""
    from toolkits.base.lr_schedule import warmup_cosine_lambda

    if not job.init_model_dir:
        set_statistics(model, data)
    model.to(device).train()
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=job.train.lr, weight_decay=job.train.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, warmup_cosine_lambda(job.train.warmup_steps, job.train.steps, 0.1)
    )
    gen = torch.Generator().manual_seed(job.train.seed)
    horizon, batch_size = job.train.horizon, job.train.batch_size
    log(f"observation model (learned code): {len(data)} windows; "
        f"{sum(q.numel() for q in params) / 1e6:.2f}M parameters, on {device}")  # fmt: skip
    start = time.time()
    for step in range(1, job.train.steps + 1):
        index = torch.randint(0, len(data), (1, batch_size), generator=gen)
        batch = tensors_to(data.batch(index), device)
        frames = frame_batch(model, data, success_frames(data, batch_size, gen), device)
        losses = codec_losses(model, batch, frames, horizon, job.train.code_weight)
        loss = (
            losses["proprio"] + losses["code"] + job.train.decode_weight * (losses["decode"] + losses["decode_pred"])
            + job.train.success_weight * losses["success"] + losses.get("value", 0.0)
        )  # fmt: skip
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if step % job.train.log_interval == 0 or step == job.train.steps:
            parts = ", ".join(f"{name}={value.item():.4g}" for name, value in losses.items())
            log(f"observation model step {step}/{job.train.steps}: {parts} ({time.time() - start:.0f} s)")
    model.eval()


@torch.no_grad()
def codes_of(model, latents: dict[int, torch.Tensor], batch: int = 512) -> dict:
    """Per episode, the trained encoder's code of every frame (numpy [T, D]), for the held-out report."""
    return {
        i: torch.cat([model.encoder(part.to(model.device)) for part in v.split(batch)]).cpu().numpy()
        for i, v in latents.items()
    }


def fit_and_report(model, job, episodes, train_ids, held_ids, latents, dynamics, device, log=print) -> None:
    """Train ``model`` on the episodes ``train_ids`` (their VAE ``latents`` per episode), then report it on
    ``held_ids``: the open-loop and success measures of ``state_eval.evaluate`` on its codes, and its frames."""
    from world_models.state_data import StateWindows
    from world_models.state_eval import evaluate

    horizon = job.train.horizon
    windows = dict(chunk=job.model.action_chunk, horizon=horizon, state_type=job.data.state_type,
                   success_labels=job.train.success_labels, value_discount=job.model.value_discount)  # fmt: skip
    flat = {i: latents[i].reshape(len(latents[i]), -1).numpy() for i in train_ids}
    train_learned_codec(model, job, StateWindows(episodes, train_ids, features=flat, **windows), device, log)
    if held_ids:
        codes = codes_of(model, {i: latents[i] for i in held_ids})
        metrics = evaluate(model, StateWindows(episodes, held_ids, features=codes, **windows), horizon)
        log("state model, held out: " + ", ".join(f"{key}={value:.4g}" for key, value in metrics.items()))
        report_learned_frames(
            model, dynamics.to(device), episodes, held_ids, latents, job.data.state_type, log
        )


@torch.no_grad()
def report_learned_frames(model, dynamics, episodes, held_ids, latents, state_type: str, log=print) -> None:
    """Design B's frames: the held-out PSNR of frames decoded from the code of the real frame and the real
    proprioception, against the VAE's own reconstruction (its ceiling)."""
    from policy_and_value.envs.metaworld_tasks import select_state
    from world_models.state_eval import psnr

    frames = torch.cat([torch.from_numpy(episodes.read(i, "images")) for i in held_ids])
    codes = torch.cat([latents[i] for i in held_ids])
    proprio = torch.cat(
        [torch.from_numpy(select_state(episodes.read(i, "state"), state_type)) for i in held_ids]
    )
    pick = torch.randperm(len(frames), generator=torch.Generator().manual_seed(0))[:256]
    states = model.observe(proprio[pick].float().to(model.device), codes[pick].to(model.device))
    rendered = dynamics.decode(model.render_latents(states, None)[:, None]).cpu()
    recon = dynamics.decode(codes[pick][:, None].to(model.device)).cpu()
    real = frames[pick][:, None]
    log(f"observation model, held out: frames from its code PSNR {psnr(rendered, real):.2f} dB "
        f"(the VAE's reconstruction: {psnr(recon, real):.2f} dB)")  # fmt: skip
