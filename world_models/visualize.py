"""Videos of world-model predictions: imagined frames with the reward curve, beside real frames when known.

Each video frame shows the camera views side by side (imagined on top, the recorded ones below when
the rollout replays an episode's actions) and, under them, the reward model's score of every frame of
the episode so far (drawn with numpy; one point per frame, the current one highlighted).
"""

from __future__ import annotations

import os

import imageio.v2 as imageio
import numpy as np

CURVE_HEIGHT = 32
CURVE_COLOR = (240, 200, 60)
NOW_COLOR = (80, 220, 80)
BACKGROUND = 24


def side_by_side(views: np.ndarray) -> np.ndarray:
    """[V, H, W, 3] -> [H, V*W, 3]."""
    return np.concatenate(list(views), axis=1)


def reward_curve(
    rewards: list[float], width: int, length: int, lo: float = 0.0, hi: float = 1.0
) -> np.ndarray:
    """A [CURVE_HEIGHT, width, 3] strip plotting ``rewards`` (in [lo, hi]) over ``length`` frames."""
    strip = np.full((CURVE_HEIGHT, width, 3), BACKGROUND, dtype=np.uint8)
    if not rewards:
        return strip
    xs = (np.arange(len(rewards)) * (width - 1) / max(1, length - 1)).astype(int)
    span = max(hi - lo, 1e-6)
    ys = ((1 - np.clip((np.asarray(rewards) - lo) / span, 0, 1)) * (CURVE_HEIGHT - 1)).astype(int)
    for k in range(len(xs)):
        x0, y0 = xs[k], ys[k]
        x1, y1 = (xs[k + 1], ys[k + 1]) if k + 1 < len(xs) else (x0, y0)
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for s in range(n + 1):  # a straight segment between consecutive points
            strip[y0 + (y1 - y0) * s // n, x0 + (x1 - x0) * s // n] = CURVE_COLOR
    strip[max(0, ys[-1] - 1) : ys[-1] + 2, max(0, xs[-1] - 1) : xs[-1] + 2] = NOW_COLOR
    return strip


def compose_frame(
    predicted: np.ndarray, rewards: list[float], length: int, real: np.ndarray | None = None, scale: int = 2,
    lo: float = 0.0, hi: float = 1.0,
) -> np.ndarray:  # fmt: skip
    """One video frame: predicted views [V, H, W, 3] (over the real ones when given) and the reward curve
    on the scale [lo, hi]."""
    rows = [side_by_side(predicted)]
    if real is not None:
        rows.append(side_by_side(real))
    body = np.concatenate(rows, axis=0).repeat(scale, 0).repeat(scale, 1)
    return np.concatenate([body, reward_curve(rewards, body.shape[1], length, lo, hi)], axis=0)


class PredictionVideoWriter:
    """Collects imagined frames and rewards per env and writes one mp4 per finished episode."""

    def __init__(self, out_dir: str, num_envs: int, fps: int = 10, rank: int = 0):
        self.dir = out_dir
        os.makedirs(out_dir, exist_ok=True)
        self.fps = fps
        self.rank = rank
        self.frames: list[list[np.ndarray]] = [[] for _ in range(num_envs)]
        self.rewards: list[list[float]] = [[] for _ in range(num_envs)]
        self.real: list[list[np.ndarray | None]] = [[] for _ in range(num_envs)]
        self.count = [0] * num_envs
        self.written: list[str] = []

    def start(self, i: int, first_views: np.ndarray, reward: float = 0.0) -> None:
        """Begin env ``i``'s episode from its first (real) frame [V, H, W, 3] and that frame's reward
        (envs beyond the writer's ``num_envs`` are not recorded)."""
        if i >= len(self.frames):
            return
        self.frames[i] = [first_views]
        self.rewards[i] = [float(reward)]
        self.real[i] = [first_views]

    def add(self, i: int, views: np.ndarray, reward: float, real: np.ndarray | None = None) -> None:
        """Append one imagined frame [V, H, W, 3] of env ``i``, its reward and the recorded frame, if known."""
        if i >= len(self.frames):
            return
        self.frames[i].append(views)
        self.rewards[i].append(float(reward))
        self.real[i].append(real)

    def finish(self, i: int) -> str | None:
        """Write env ``i``'s episode (real frames beside when every frame has one); returns the mp4 path."""
        if i >= len(self.frames):
            return None
        frames, rewards, real = self.frames[i], self.rewards[i], self.real[i]
        if len(frames) < 2:
            return None
        show_real = all(r is not None for r in real)
        lo, hi = min(0.0, min(rewards)), max(1.0, max(rewards))  # [0, 1], widened to the episode's values
        video = [
            compose_frame(views, rewards[: k + 1], len(frames), real[k] if show_real else None, lo=lo, hi=hi)
            for k, views in enumerate(frames)
        ]
        path = os.path.join(self.dir, f"rank{self.rank}_env{i}_episode{self.count[i]}.mp4")
        imageio.mimwrite(path, video, fps=self.fps, macro_block_size=1)
        self.count[i] += 1
        self.written.append(path)
        self.frames[i], self.rewards[i], self.real[i] = [], [], []
        return path
