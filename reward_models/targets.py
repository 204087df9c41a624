"""Training targets and labels from episodes: progress labels, TD targets for failures, advantages."""

from __future__ import annotations

import numpy as np
import torch


def progress_labels(num_frames: int) -> np.ndarray:
    """Progress of a successful episode's frames: frame i of T+1 frames -> i / T (0 at the start, 1 at success)."""
    return np.arange(num_frames, dtype=np.float32) / max(1, num_frames - 1)


def success_labels(success: np.ndarray) -> np.ndarray:
    """Per-frame success-classifier labels [T+1] from the per-action success flags [T]: frame i+1 shows
    the state after action i; frames from the first success on are 1."""
    done = np.maximum.accumulate(success.astype(bool)) if len(success) else np.zeros(0, bool)
    return np.concatenate([[0.0], done.astype(np.float32)]).astype(np.float32)


def td_targets(next_values: torch.Tensor, is_last: torch.Tensor, gamma: float) -> torch.Tensor:
    """RISE-style target for frames of failed episodes: ``gamma * V(next frame)``, and 0 at the last frame
    (the episode ended without success, so no progress is still to come); it pulls failures down."""
    return torch.where(is_last, torch.zeros_like(next_values), gamma * next_values)


def advantages_from_values(values: np.ndarray, horizon: int, scale: float = 1.0) -> np.ndarray:
    """``advantage(t) = mean_{k=1..H} (V(t+k) - V(t)) * scale`` for t < T, with V of the T+1 frames
    (indices past the end use the last frame)."""
    t_plus_1 = len(values)
    steps = t_plus_1 - 1
    idx = np.minimum(np.arange(steps)[:, None] + np.arange(1, horizon + 1)[None], t_plus_1 - 1)
    return ((values[idx] - values[:steps, None]).mean(axis=1) * scale).astype(np.float32)
