"""Held-out measures of a state model (and an observation model): the open-loop error of its members against "the
state stays", the hand's error in metres, its success classifier's AUC on real and predicted states, and the PSNR of
frames; shared by the state model's training and the observation model's learned code."""

from __future__ import annotations

import torch

from toolkits.base.tensors import tensors_to


@torch.no_grad()
def evaluate(model, held, horizon: int, samples: int = 512, seed: int = 0) -> dict[str, float]:
    """Held-out windows: open-loop RMS error after ``horizon`` chunks (normalised, and hand position in
    metres) for the ensemble mean and for "the state stays"; success AUC on real and predicted states."""
    from toolkits.base.metrics import auc

    gen = torch.Generator().manual_seed(seed)
    index = torch.randperm(len(held), generator=gen)[:samples]
    batch = tensors_to(held.batch(index[None].expand(model.cfg.ensemble_size, -1)), model.device)
    k, n = batch["state"].shape[:2]
    tasks = model.task_one_hot(batch["prompt"][:n])
    chunk = model.cfg.action_chunk
    actions = batch["actions"][0].reshape(n, horizon, chunk, -1)
    state, predicted = batch["state"], []
    for h in range(horizon):
        states = model.rollout_chunk(state, actions[:, h], tasks)
        predicted.append(states)
        state = states[:, :, -1]
    pred = torch.cat(predicted, 2)  # [K, N, H*C, S]
    real, mask = batch["next_states"][0], batch["mask"][0] > 0
    last = mask.sum(1) - 1  # the last valid step of each window
    rows = torch.arange(n, device=model.device)
    mean_end, real_end = pred.mean(0)[rows, last], real[rows, last]
    stays = batch["state"][0]
    norm = model.delta_std

    def rms(a: torch.Tensor, b: torch.Tensor) -> float:
        return float(((a - b) / norm).pow(2).mean().sqrt())

    def hand(a: torch.Tensor, b: torch.Tensor) -> float:
        return float((a[:, :3] - b[:, :3]).norm(dim=1).mean())

    known = mask & (batch["labelled"][0] > 0)  # steps of episodes whose outcome is known
    prob_real = model.success_prob(real[None].expand(k, -1, -1, -1), tasks)[known].cpu().numpy()
    prob_pred = model.success_prob(pred, tasks)[known].cpu().numpy()
    labels = batch["success"][0][known].cpu().numpy() > 0
    reward_fit = {}
    if model.cfg.reward_head:  # R^2 of the members' mean reward against the recorded one
        target = batch["reward"][0][mask]

        def r2(values: torch.Tensor) -> float:
            return float(
                1 - (values.mean(0)[mask] - target).pow(2).mean() / target.var(correction=0).clamp(min=1e-12)
            )

        reward_fit = {
            "reward_r2_real_states": r2(model.reward_values(real[None].expand(k, -1, -1, -1), tasks)),
            "reward_r2_predicted_states": r2(model.reward_values(pred, tasks)),
        }
    return {
        "open_loop_rms": rms(mean_end, real_end), "stays_rms": rms(stays, real_end),
        "hand_error_m": hand(mean_end, real_end), "stays_hand_error_m": hand(stays, real_end),
        "success_auc_real_states": auc(prob_real, labels), "success_auc_predicted_states": auc(prob_pred, labels),
        "positives": float(labels.sum()), **reward_fit,
    }  # fmt: skip


def psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    """Peak signal-to-noise ratio of uint8 images, in dB."""
    mse = (a.float() - b.float()).pow(2).mean()
    return float(10 * torch.log10(255.0**2 / mse.clamp(min=1e-8)))
