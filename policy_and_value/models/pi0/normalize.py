"""State/action normalisation statistics, stored as openpi's ``norm_stats.json`` beside the weights.

``quantile`` maps [q01, q99] to [-1, 1] (pi0.5's choice; also what state discretisation assumes);
``mean_std`` standardises. Statistics may cover more dimensions than the env uses (they are sliced).
Without statistics the normaliser is the identity.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

EPS = 1e-6
KEYS = ("state", "actions")
FIELDS = ("mean", "std", "q01", "q99")


@dataclass
class Stats:
    """Per-dimension statistics of one quantity."""

    mean: torch.Tensor
    std: torch.Tensor
    q01: torch.Tensor
    q99: torch.Tensor

    @classmethod
    def from_data(cls, x: torch.Tensor) -> Stats:
        """Statistics of samples ``x [..., D]`` (all leading dims pooled)."""
        flat = x.reshape(-1, x.shape[-1]).double()
        q = torch.quantile(flat, torch.tensor([0.01, 0.99], dtype=torch.float64), dim=0)
        return cls(flat.mean(0).float(), flat.std(0, unbiased=False).float(), q[0].float(), q[1].float())

    def to_json(self) -> dict[str, list[float]]:
        return {name: getattr(self, name).tolist() for name in FIELDS}

    @classmethod
    def from_json(cls, data: dict[str, list[float]]) -> Stats:
        return cls(*(torch.tensor(data[name], dtype=torch.float32) for name in FIELDS))


def save_norm_stats(stats: dict[str, Stats], path: str | Path) -> None:
    """Write ``{"norm_stats": {"state": {...}, "actions": {...}}}`` (openpi's layout)."""
    Path(path).write_text(json.dumps({"norm_stats": {k: v.to_json() for k, v in stats.items()}}, indent=2))


def load_norm_stats(path: str | Path) -> dict[str, Stats]:
    """Read a ``norm_stats.json`` (openpi's or ours)."""
    data = json.loads(Path(path).read_text())
    data = data.get("norm_stats", data)
    return {k: Stats.from_json(v) for k, v in data.items() if k in KEYS}


class Normalizer(nn.Module):
    """Normalises state and un-normalises actions; statistics live in non-persistent buffers."""

    def __init__(self, mode: str = "quantile", state_dim: int = 0, action_dim: int = 0):
        super().__init__()
        self.mode = mode
        self.state_dim, self.action_dim = state_dim, action_dim
        self.present: dict[str, bool] = {k: False for k in KEYS}
        for key in KEYS:
            for name in FIELDS:
                self.register_buffer(f"{key}_{name}", torch.zeros(0), persistent=False)

    def set_stats(self, stats: dict[str, Stats]) -> None:
        """Install statistics (missing keys stay identity)."""
        for key, value in stats.items():
            for name in FIELDS:
                buf = getattr(self, f"{key}_{name}")
                setattr(self, f"{key}_{name}", getattr(value, name).to(buf.device, torch.float32))
            self.present[key] = True

    def stats(self) -> dict[str, Stats]:
        """The installed statistics (for saving)."""
        return {k: Stats(*(getattr(self, f"{k}_{n}").cpu() for n in FIELDS)) for k in KEYS if self.present[k]}

    def _get(self, key: str, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.mode == "quantile":
            lo, hi = getattr(self, f"{key}_q01")[:dim], getattr(self, f"{key}_q99")[:dim]
            return lo, hi - lo + EPS
        return getattr(self, f"{key}_mean")[:dim], getattr(self, f"{key}_std")[:dim] + EPS

    def normalize(self, key: str, x: torch.Tensor) -> torch.Tensor:
        """Env units -> model units."""
        if self.mode == "none" or not self.present[key]:
            return x.float()
        offset, scale = self._get(key, x.shape[-1])
        y = (x.float() - offset) / scale
        return y * 2 - 1 if self.mode == "quantile" else y

    def unnormalize(self, key: str, y: torch.Tensor) -> torch.Tensor:
        """Model units -> env units."""
        if self.mode == "none" or not self.present[key]:
            return y.float()
        offset, scale = self._get(key, y.shape[-1])
        y = (y.float() + 1) / 2 if self.mode == "quantile" else y.float()
        return y * scale + offset
