"""PPO losses over action chunks: clipped (and dual-clipped) policy loss, clipped Huber value loss."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` where ``mask`` (broadcast over trailing dims) is set; a float mask weighs each entry
    (an env group's ``loss_weight``). 0 where nothing is set."""
    m = mask.to(x.dtype)
    while m.dim() < x.dim():
        m = m.unsqueeze(-1)
    m = m.expand_as(x)
    return (x * m).sum() / m.sum().clamp_min(torch.finfo(m.dtype).tiny)


def broadcast_to_logprob(adv: torch.Tensor, logprob: torch.Tensor) -> torch.Tensor:
    """Chunk-level [N] or action-level [N, C] advantages to the logprob's shape ([N], [N, C], [N, C, A])."""
    if adv.dim() > logprob.dim():
        raise ValueError(
            f"advantages {tuple(adv.shape)} are finer than log-probs {tuple(logprob.shape)}: "
            "use logprob_type action_level or token_level with reward_type action_level"
        )
    while adv.dim() < logprob.dim():
        adv = adv.unsqueeze(-1)
    return adv.expand_as(logprob)


def ppo_policy_loss(
    logprob: torch.Tensor,
    old_logprob: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_ratio_low: float,
    clip_ratio_high: float,
    clip_ratio_c: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate with ratio range [1 - low, 1 + high]; dual clip bounds the loss of negative
    advantages by ``clip_ratio_c * |A|``. Returns the loss and detached metrics."""
    adv = broadcast_to_logprob(advantages, logprob)
    log_ratio = logprob - old_logprob
    ratio = torch.exp(log_ratio)
    loss1 = -adv * ratio
    loss2 = -adv * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    loss = torch.maximum(loss1, loss2)
    if clip_ratio_c is not None:
        loss = torch.where(adv < 0, torch.minimum(loss, -adv * clip_ratio_c), loss)
    clipped = (loss2 > loss1).float()
    with torch.no_grad():
        metrics = {
            "policy_loss": masked_mean(loss, mask),
            "ratio": masked_mean(ratio, mask),
            "clip_fraction": masked_mean(clipped, mask),
            "approx_kl": masked_mean((ratio - 1) - log_ratio, mask),
        }
    return masked_mean(loss, mask), metrics


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    value_clip: float | None = None,
    huber_delta: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO2-style clipped value loss (max of clipped and unclipped), Huber or 0.5 * squared error."""

    def err(pred: torch.Tensor) -> torch.Tensor:
        if huber_delta is not None:
            return F.huber_loss(pred, returns, delta=huber_delta, reduction="none")
        return 0.5 * (pred - returns) ** 2

    loss = err(values)
    if value_clip is not None:
        clipped = old_values + torch.clamp(values - old_values, -value_clip, value_clip)
        loss = torch.maximum(loss, err(clipped))
    out = masked_mean(loss, mask)
    return out, {"value_loss": out.detach()}


def explained_variance(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """1 - Var[target - pred] / Var[target] over the masked entries (nan when Var[target] is 0)."""
    m = mask.to(pred.dtype)
    while m.dim() < pred.dim():
        m = m.unsqueeze(-1)
    sel = m.expand_as(pred).bool()
    p, t = pred[sel], target[sel]
    var = t.var(unbiased=False)
    if var == 0:
        return torch.tensor(float("nan"))
    return 1 - (t - p).var(unbiased=False) / var
