"""Metric sinks: TensorBoard by default; wandb and swanlab only when listed (imported only then).

``mode="offline"`` keeps wandb and swanlab runs under the run's log directory (``wandb/offline-run-*``,
``swanlog/``) for a later ``wandb sync`` / ``swanlab sync``: nothing goes over the network."""

from __future__ import annotations

import os
from typing import Any


class MetricLogger:
    """Writes scalar dicts to every backend in ``logger_backends``."""

    def __init__(
        self,
        log_dir: str,
        backends: list[str],
        project: str,
        experiment: str,
        config: dict[str, Any],
        mode: str = "online",
    ):
        self.sinks: list[Any] = []
        self.tb = None
        if "tensorboard" in backends:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(os.path.join(log_dir, "tensorboard"))
        self.wandb = None
        if "wandb" in backends:
            import wandb

            self.wandb = wandb.init(project=project, name=experiment, config=config, dir=log_dir, mode=mode)
        self.swanlab = None
        if "swanlab" in backends:
            import swanlab

            self.swanlab = swanlab.init(
                project=project,
                name=experiment,
                config=config,
                log_dir=os.path.join(log_dir, "swanlog"),
                mode=mode,
            )

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Write one step's scalars."""
        if self.tb is not None:
            for k, v in metrics.items():
                self.tb.add_scalar(k, v, step)
            self.tb.flush()
        if self.wandb is not None:
            self.wandb.log(metrics, step=step)
        if self.swanlab is not None:
            self.swanlab.log(metrics, step=step)

    def log_videos(
        self, videos: list[tuple[str, bytes, int, int]], step: int, prefix: str = "eval/video"
    ) -> None:
        """Animated GIFs (name, bytes, height, width) as TensorBoard images ``<prefix>/<name>``, as
        ``add_video`` writes them (without the moviepy it needs)."""
        if self.tb is None or not videos:
            return
        from tensorboard.compat.proto.summary_pb2 import Summary

        values = [
            Summary.Value(
                tag=f"{prefix}/{name}",
                image=Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=gif),
            )
            for name, gif, height, width in videos
        ]
        self.tb._get_file_writer().add_summary(Summary(value=values), step)
        self.tb.flush()

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()
        if self.swanlab is not None:
            self.swanlab.finish()
