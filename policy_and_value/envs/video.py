"""Episode videos: one mp4 per recorded env per episode, camera views side by side.

Written with imageio's ffmpeg plugin (moviepy, which TensorBoard's ``add_video`` needs, is not used).
The optional overlay is drawn with numpy: a top strip whose left square is green once the episode has
succeeded (red before) and whose bar shows the step reward (Meta-World rewards lie in [0, 10]), and a
bottom strip showing elapsed episode time.
"""

from __future__ import annotations

import os

import imageio.v2 as imageio
import numpy as np

from policy_and_value.config.schema import VideoConfig

STRIP = 6
REWARD_SCALE = 10.0


def gif_bytes(path: str, fps: int) -> tuple[bytes, int, int]:
    """An mp4 re-encoded as an animated GIF (what TensorBoard's image dashboard plays); (bytes, height, width).

    One palette for the whole clip, taken from its first, middle and last frames (the overlay's colours and
    the scene's), without dithering: a sixth of the time of quantizing every frame on its own, and smaller.
    """
    import io

    from PIL import Image

    frames = imageio.mimread(path, memtest=False)
    keys = np.concatenate([frames[0], frames[len(frames) // 2], frames[-1]], axis=0)
    palette = Image.fromarray(keys).quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    images = [Image.fromarray(f).quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    buf = io.BytesIO()
    images[0].save(
        buf, format="GIF", save_all=True, append_images=images[1:], duration=round(1000 / fps), loop=0
    )
    return buf.getvalue(), int(frames[0].shape[0]), int(frames[0].shape[1])


class EpisodeVideoWriter:
    """Buffers frames of envs ``0..num_envs-1`` and writes each finished episode as an mp4."""

    def __init__(self, video_dir: str, cfg: VideoConfig, num_envs: int, rank: int = 0, max_steps: int = 500):
        self.dir = video_dir
        os.makedirs(video_dir, exist_ok=True)
        self.cfg = cfg
        self.rank = rank
        self.env_ids = set(range(num_envs))
        self.max_steps = max_steps
        self.frames: dict[int, list[np.ndarray]] = {}
        self.episode: dict[int, int] = dict.fromkeys(self.env_ids, 0)
        self.written: list[str] = []
        self.enabled = True  # episodes started while False are not recorded (the owner decides which)

    def _compose(self, views: np.ndarray, reward: float, success: bool, step: int) -> np.ndarray:
        frame = np.concatenate(list(views), axis=1)  # [H, V*W, 3]
        scale = max(1, 128 // frame.shape[0])
        frame = frame.repeat(scale, 0).repeat(scale, 1)
        if not self.cfg.info_overlay:
            return frame
        w = frame.shape[1]
        top = np.full((STRIP * scale, w, 3), 32, dtype=np.uint8)
        top[:, : STRIP * scale] = (40, 200, 40) if success else (200, 40, 40)
        bar = int((w - STRIP * scale) * float(np.clip(reward / REWARD_SCALE, 0, 1)))
        top[STRIP // 3 * scale : -(STRIP // 3) * scale or None, STRIP * scale : STRIP * scale + bar] = (
            230,
            200,
            60,
        )
        bottom = np.full((STRIP // 2 * scale, w, 3), 32, dtype=np.uint8)
        bottom[:, : int(w * min(1.0, step / self.max_steps))] = (120, 120, 220)
        return np.concatenate([top, frame, bottom], axis=0)

    def start(self, ids: np.ndarray, images) -> None:
        """Begin episodes for the recorded envs among ``ids`` with their first frames (when enabled)."""
        if not self.enabled:
            return
        for i in (int(x) for x in ids):
            if i in self.env_ids:
                self.frames[i] = [self._compose(np.asarray(images[i]), 0.0, False, 0)]

    @property
    def recording(self) -> set[int]:
        """The envs whose episode is being recorded now (only their frames need rendering)."""
        return set(self.frames)

    def add(self, i: int, views: np.ndarray, reward: float, success: bool) -> None:
        if i in self.frames:
            self.frames[i].append(self._compose(views, reward, success, len(self.frames[i])))

    def finish(self, ids: np.ndarray) -> None:
        """Write the episodes of the recorded envs among ``ids``."""
        for i in (int(x) for x in ids):
            frames = self.frames.pop(i, None)
            if frames and len(frames) > 1:
                path = os.path.join(self.dir, f"rank{self.rank}_env{i}_episode{self.episode[i]}.mp4")
                imageio.mimwrite(path, frames, fps=self.cfg.fps, macro_block_size=1)
                self.written.append(path)
                self.episode[i] += 1

    def pop_written(self) -> list[str]:
        """The mp4 files written since the last call (for logging them elsewhere, e.g. TensorBoard)."""
        written, self.written = self.written, []
        return written

    def close(self) -> None:
        """Flush episodes still in progress."""
        self.finish(np.array(sorted(self.frames)))
