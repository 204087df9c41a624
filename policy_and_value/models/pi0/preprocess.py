"""Camera images to SigLIP input: uint8 [N, V, H, W, 3] -> float [N, V, 3, S, S] in [-1, 1] (torch only)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def resize_with_pad(x: torch.Tensor, size: int, pad_value: float = -1.0) -> torch.Tensor:
    """Resize [B, 3, H, W] to fit in size x size keeping the aspect ratio, then pad (centred)."""
    h, w = x.shape[-2:]
    if (h, w) == (size, size):
        return x
    scale = size / max(h, w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=scale < 1)
    top, left = (size - nh) // 2, (size - nw) // 2
    return F.pad(x, (left, size - nw - left, top, size - nh - top), value=pad_value)


def images_to_pixels(images: torch.Tensor, size: int) -> torch.Tensor:
    """uint8 (or float in [0, 255]) [N, V, H, W, 3] -> [N, V, 3, size, size] scaled to [-1, 1]."""
    n, v, h, w, _ = images.shape
    x = images.reshape(n * v, h, w, 3).permute(0, 3, 1, 2).float() / 127.5 - 1.0
    return resize_with_pad(x, size).reshape(n, v, 3, size, size)
