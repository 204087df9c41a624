"""Rewards from frame scores for the world-model env: the modes RISE and RLinf use.

``progress`` is [N, T + 1]: the score of the frame before the chunk, then of each of the T predicted
frames. Every mode returns per-frame rewards [N, T] (times ``reward_coef``); chunk-level modes put
their single value on the chunk's last frame and zeros elsewhere.
"""

from __future__ import annotations

import torch

REWARD_MODES = ("chunk_reward", "per_frame", "v1", "v2", "relative")


def rewards_from_progress(progress: torch.Tensor, mode: str, reward_coef: float = 1.0) -> torch.Tensor:
    """``chunk_reward``: last frame's score; ``per_frame``: each frame's score; ``v1``: mean change per
    frame over the chunk; ``v2``: end of chunk minus start; ``relative``: each frame's change."""
    if mode not in REWARD_MODES:
        raise ValueError(f"reward mode must be one of {REWARD_MODES}, not {mode!r}")
    frames = progress[:, 1:]
    deltas = frames - progress[:, :-1]
    if mode == "per_frame":
        return frames * reward_coef
    if mode == "relative":
        return deltas * reward_coef
    last = {"chunk_reward": frames[:, -1], "v1": deltas.mean(dim=1), "v2": frames[:, -1] - progress[:, 0]}[
        mode
    ]
    out = torch.zeros_like(frames)
    out[:, -1] = last
    return out * reward_coef
