"""Stochastic denoising for RL on a flow-matching policy: per-step transition means/stds and densities.

Euler integration from t=1 (noise) to t=0 (actions) in ``K`` steps of size dt = 1/K. With the
predicted velocity v at (x_t, t), the clean estimate is x0 = x_t - t v and the noise estimate
x1 = x_t + (1 - t) v. A transition to t' = t - dt is Gaussian N(mean, std^2):

- ``flow_ode``: mean = (1 - t') x0 + t' x1 = x_t - dt v, std = 0 (deterministic).
- ``flow_sde``: the reverse-time SDE with the same marginals (as in Flow-GRPO):
  sigma_t = noise_level * sqrt(t / (1 - t)) (at t = 1 the denominator uses 1 - t_1 = dt),
  mean = (1 - t') x0 + (t' - sigma_t^2 dt / (2 t)) x1, std = sigma_t sqrt(dt).
- ``flow_noise``: the ODE mean with a learned, bounded std per action element (ReinFlow-style).

A rollout stores the whole chain x_{t_0}, ..., x_{t_K}; the log-prob of a transition is the Gaussian
density of x_{t_{k+1}} under the step-k mean/std, so it can be recomputed exactly from the chain.
"""

from __future__ import annotations

import math

import torch
from torch import nn

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def time_grid(num_steps: int, device: torch.device | str | None = None) -> torch.Tensor:
    """[K + 1] times 1, 1 - 1/K, ..., 0."""
    return torch.linspace(1.0, 0.0, num_steps + 1, device=device)


def sde_sigma(t: torch.Tensor, dt: float, noise_level: float) -> torch.Tensor:
    """Flow-SDE diffusion scale sigma_t = a sqrt(t / (1 - t)), with 1 - t replaced by dt at t = 1."""
    denom = torch.where(t >= 1.0, torch.full_like(t, dt), 1.0 - t)
    return noise_level * torch.sqrt(t / denom)


def transition(
    x_t: torch.Tensor,
    v: torch.Tensor,
    t: torch.Tensor,
    dt: float,
    method: str,
    noise_level: float = 0.0,
    learned_std: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and std [N, H, D] of x_{t - dt} given x_t, the velocity v and per-sample times t [N]."""
    tt = t[:, None, None]
    t_next = tt - dt
    x0 = x_t - tt * v
    x1 = x_t + (1 - tt) * v
    if method == "flow_ode":
        return x0 * (1 - t_next) + x1 * t_next, torch.zeros_like(x_t)
    if method == "flow_sde":
        sigma = sde_sigma(t, dt, noise_level)[:, None, None]
        mean = x0 * (1 - t_next) + x1 * (t_next - sigma.pow(2) * dt / (2 * tt))
        return mean, (sigma * math.sqrt(dt)).expand_as(x_t).contiguous()
    if method == "flow_noise":
        if learned_std is None:
            raise ValueError("flow_noise needs the noise head's std")
        return x0 * (1 - t_next) + x1 * t_next, learned_std
    raise ValueError(f"unknown noise method {method!r}")


def gaussian_logprob(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Element-wise log N(x; mean, std^2); 0 where std == 0 (a deterministic element)."""
    stochastic = std > 0
    safe = torch.where(stochastic, std, torch.ones_like(std))
    lp = -0.5 * ((x - mean) / safe).pow(2) - safe.log() - LOG_SQRT_2PI
    return torch.where(stochastic, lp, torch.zeros_like(lp))


def gaussian_entropy(std: torch.Tensor) -> torch.Tensor:
    """Element-wise entropy of N(., std^2); 0 where std == 0."""
    stochastic = std > 0
    safe = torch.where(stochastic, std, torch.ones_like(std))
    ent = 0.5 + LOG_SQRT_2PI + safe.log()
    return torch.where(stochastic, ent, torch.zeros_like(ent))


class NoiseHead(nn.Module):
    """flow_noise: per-element exploration std in [lo, hi] from the expert's action-token outputs."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, std_range: tuple[float, float]):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(), nn.Linear(hidden, out_dim))
        self.lo, self.hi = std_range

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        squashed = torch.sigmoid(self.net(features.to(self.net[0].weight.dtype)).float())
        return self.lo + (self.hi - self.lo) * squashed


class ValueHead(nn.Module):
    """Critic MLP on a pooled feature vector; ``out_dim`` is 1 (chunk value) or C (per action)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, out_dim),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features.to(self.net[0].weight.dtype)).float()
