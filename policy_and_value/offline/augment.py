"""Image and state augmentations for imitation, batched in torch (uint8 in, uint8 out)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def random_shift(images: torch.Tensor, pad: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """DrQ-style shift: edge-pad [N, V, H, W, 3] by ``pad`` and crop back at a random offset per sample."""
    if pad <= 0:
        return images
    n, v, h, w, c = images.shape
    x = images.permute(0, 1, 4, 2, 3).reshape(n, v * c, h, w).float()
    x = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    rows = (dy[:, None] + torch.arange(h)[None])[:, None, :, None].expand(n, v * c, h, w + 2 * pad)
    x = x.gather(2, rows)
    cols = (dx[:, None] + torch.arange(w)[None])[:, None, None, :].expand(n, v * c, h, w)
    x = x.gather(3, cols)
    return x.reshape(n, v, c, h, w).permute(0, 1, 3, 4, 2).round().to(torch.uint8)


def color_jitter(
    images: torch.Tensor, brightness: float, contrast: float, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Scale brightness and contrast by a random factor in [1 - b, 1 + b] per sample (all views alike)."""
    if brightness <= 0 and contrast <= 0:
        return images
    n = images.shape[0]
    x = images.float()
    shape = (n, 1, 1, 1, 1)
    if contrast > 0:
        c = 1 + (torch.rand(shape, generator=generator) * 2 - 1) * contrast
        mean = x.mean(dim=(2, 3, 4), keepdim=True)
        x = (x - mean) * c + mean
    if brightness > 0:
        x = x * (1 + (torch.rand(shape, generator=generator) * 2 - 1) * brightness)
    return x.clamp(0, 255).round().to(torch.uint8)
