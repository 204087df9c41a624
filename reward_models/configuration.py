"""Configuration of the frame scorers (progress/value model and success classifier); saved as config.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from toolkits.base.model_dir import read_config_json, write_config_json

KINDS = ("progress", "success")


@dataclass
class RewardModelConfig:
    """A scorer over the frames of every camera view plus the task prompt.

    ``kind``: ``progress`` regresses task progress in [0, 1] (RISE's value model); ``success`` is a
    classifier whose output is the probability that the frame shows the task done (RLinf's approach).
    Prompts are embedded with a learned table over ``prompts`` (the tasks the model was trained on).
    """

    kind: str = "progress"
    image_size: int = 64
    num_views: int = 1
    channels: list[int] = field(default_factory=lambda: [16, 32, 64])  # conv widths (stride 2 each)
    hidden: int = 128
    prompt_dim: int = 32
    prompts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first bad field."""
        if self.kind not in KINDS:
            raise ValueError(f"RewardModelConfig: kind must be one of {KINDS}, not {self.kind!r}")
        if self.image_size < 8 or self.num_views < 1 or not self.channels or self.hidden < 1:
            raise ValueError(
                "RewardModelConfig: image_size >= 8, num_views >= 1, channels non-empty, hidden >= 1"
            )

    def save(self, path: str | Path) -> None:
        """Write ``config.json``."""
        write_config_json(path, self, "worldrl_reward_model")

    @classmethod
    def load(cls, path: str | Path) -> RewardModelConfig:
        """Read a ``config.json`` written by ``save``; unknown keys are an error."""
        return read_config_json(cls, path, "reward-model")
