"""The learned encoder and decoder of an observation model with ``latent_encoder: learned`` (design B): the cameras'
normalised VAE latents [N, V, C, h, w] -> a small bounded code z, and (z, proprioception) -> the latents again.

Trained with the dynamics ensemble (``world_models.train_learned_codec``), so z keeps what the next chunks and the
episode's outcome depend on, as Dreamer's and TD-MPC2's encoders do, instead of what carries the most pixel variance
(design A's principal components). The decoder also reads the proprioception: the arm's pose is known exactly from
it, so the drawn arm need not come from z.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class LatentEncoder(nn.Module):
    """Views stacked as channels, two convolutions (the second halves h and w), a linear map to ``code_dim``
    numbers in (-1, 1)."""

    def __init__(self, latent_shape: list[int], code_dim: int, width: int = 64):
        super().__init__()
        views, channels, h, w = latent_shape
        self.latent_shape = list(latent_shape)
        self.net = nn.Sequential(
            nn.Conv2d(views * channels, width, 3, padding=1), nn.SiLU(),
            nn.Conv2d(width, width, 3, stride=2, padding=1), nn.SiLU(),
            nn.Flatten(), nn.Linear(width * math.ceil(h / 2) * math.ceil(w / 2), 256), nn.SiLU(),
            nn.Linear(256, code_dim), nn.Tanh(),
        )  # fmt: skip

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        """[N, V, C, h, w] -> [N, code_dim]."""
        return self.net(latents.reshape(len(latents), -1, *latents.shape[-2:]))


class LatentDecoder(nn.Module):
    """(z, normalised proprioception) -> latents [N, V, C, h, w]: a linear map to a half-size grid, one transposed
    convolution back to h x w, one convolution to the views' channels."""

    def __init__(self, latent_shape: list[int], in_dim: int, width: int = 64):
        super().__init__()
        views, channels, h, w = latent_shape
        self.latent_shape = list(latent_shape)
        self.grid = (width, math.ceil(h / 2), math.ceil(w / 2))
        self.net = nn.Sequential(
            nn.Linear(in_dim, 256), nn.SiLU(), nn.Linear(256, math.prod(self.grid)), nn.SiLU(),
            nn.Unflatten(1, self.grid),
            nn.ConvTranspose2d(width, width, 4, stride=2, padding=1), nn.SiLU(),
            nn.Conv2d(width, views * channels, 3, padding=1),
        )  # fmt: skip

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """[N, in_dim] -> [N, V, C, h, w]."""
        views, channels, h, w = self.latent_shape
        return self.net(inputs)[..., :h, :w].reshape(len(inputs), views, channels, h, w)
