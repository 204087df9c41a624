"""``deploy.json``: what a robot must know to drive a policy directory, beside its ``config.json``.

Cameras (names, in the order the policy reads its views), image size, state and action sizes, the
action chunk the robot executes per query, the prompts (task -> instruction) the policy was trained
on, action bounds and the job it came from. ``toolkits.ckpt_convertor.export_policy`` writes it; a
directory without one (e.g. an imitation output) is served with the cameras given on the command line.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEPLOY_FILE = "deploy.json"
FORMAT_VERSION = 1


@dataclass
class DeploySpec:
    """The robot-facing description of a policy directory."""

    cameras: list[str]
    image_size: int
    state_dim: int
    action_dim: int
    chunk_size: int  # actions executed per query (the policy's num_action_chunks)
    prompts: dict[str, str] = field(default_factory=dict)  # task name -> instruction text
    state_type: str | None = None  # metaworld: "full" (39) or "proprio" (4)
    action_low: list[float] | None = None
    action_high: list[float] | None = None
    max_episode_steps: int | None = None
    source: dict[str, Any] = field(default_factory=dict)  # checkpoint, weights, global step, config

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict with the format version first."""
        return {"format_version": FORMAT_VERSION, **asdict(self)}

    def save(self, directory: str | Path) -> Path:
        """Write ``directory/deploy.json``; returns its path."""
        path = Path(directory) / DEPLOY_FILE
        path.write_text(json.dumps(self.to_dict(), indent=2))
        return path

    @classmethod
    def load(cls, directory: str | Path) -> DeploySpec:
        """Read ``directory/deploy.json``; unknown keys are an error naming them."""
        path = Path(directory) / DEPLOY_FILE
        data = json.loads(path.read_text())
        data.pop("format_version", None)
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown} (known: {sorted(known)})")
        return cls(**data)


def spec_for_policy_dir(
    directory: str | Path, cameras: list[str] | None = None, tasks: list[str] | None = None
) -> DeploySpec:
    """The directory's ``deploy.json``, or one made from its ``config.json`` and the given cameras (then
    required) and tasks; cameras or tasks given override the file's."""
    from policy_and_value.models.pi0 import Pi0Config
    from policy_and_value.models.pi0.factory import task_prompts

    directory = Path(directory)
    config = directory / "config.json"
    if not config.is_file():
        raise FileNotFoundError(f"--policy-dir={directory}: no config.json (not a policy directory)")
    if (directory / DEPLOY_FILE).is_file():
        spec = DeploySpec.load(directory)
    else:
        if not cameras:
            raise ValueError(
                f"--policy-dir={directory}: no {DEPLOY_FILE}; pass --cameras with the camera names in the "
                "order the policy was trained with (e.g. --cameras corner gripperPOV)"
            )
        cfg = Pi0Config.load(config)
        spec = DeploySpec(
            cameras=list(cameras), image_size=cfg.vision.image_size, state_dim=cfg.state_dim,
            action_dim=cfg.action_dim, chunk_size=cfg.num_action_chunks,
        )  # fmt: skip
    if cameras:
        spec.cameras = list(cameras)
    if tasks:
        spec.prompts = dict(zip(tasks, task_prompts(tasks), strict=True))
    return spec
