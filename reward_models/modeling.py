"""Frame scorers behind the reward contract ``score(images [N, T, V, H, W, 3], prompt) -> [N, T]`` in [0, 1].

One small conv encoder is shared by the views; the view features are concatenated with the prompt's
embedding and an MLP gives one number per frame: a progress value (sigmoid) or a success logit.
Frames of all envs and time steps are scored in one batched forward.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from reward_models.configuration import RewardModelConfig
from toolkits.base.model_dir import ModelDirMixin


class FrameScorer(ModelDirMixin, nn.Module):
    """Progress/value model or success classifier over multi-view frames and a task prompt."""

    config_class = RewardModelConfig
    model_kind = "reward model"

    def __init__(self, cfg: RewardModelConfig):
        super().__init__()
        self.cfg = cfg
        layers: list[nn.Module] = []
        in_ch = 3
        for ch in cfg.channels:
            layers += [nn.Conv2d(in_ch, ch, 3, stride=2, padding=1), nn.GroupNorm(1, ch), nn.SiLU()]
            in_ch = ch
        self.encoder = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(2), nn.Flatten())
        feat = in_ch * 4
        self.prompt_embedding = nn.Embedding(max(1, len(cfg.prompts)), cfg.prompt_dim)
        self.head = nn.Sequential(
            nn.Linear(cfg.num_views * feat + cfg.prompt_dim, cfg.hidden),
            nn.SiLU(),
            nn.Linear(cfg.hidden, cfg.hidden),
            nn.SiLU(),
            nn.Linear(cfg.hidden, 1),
        )
        self._prompt_index = {p: i for i, p in enumerate(cfg.prompts)}

    @property
    def device(self) -> torch.device:
        return self.head[0].weight.device

    def prompt_ids(self, prompt: Sequence[str] | None, n: int) -> torch.Tensor:
        """Indices of the prompts in the model's table; an unknown prompt is an error naming it."""
        if not self.cfg.prompts:
            return torch.zeros(n, dtype=torch.long, device=self.device)
        if prompt is None:
            raise ValueError("this reward model is prompt-conditioned: pass one prompt per env")
        unknown = sorted({p for p in prompt if p not in self._prompt_index})
        if unknown:
            raise ValueError(f"reward model: unknown prompts {unknown}; it knows {self.cfg.prompts}")
        return torch.tensor([self._prompt_index[p] for p in prompt], dtype=torch.long, device=self.device)

    def logits(self, images: torch.Tensor, prompt: Sequence[str] | None) -> torch.Tensor:
        """Raw outputs [N, T] for uint8 frames [N, T, V, H, W, 3]."""
        n, t, v, h, w, _ = images.shape
        if v != self.cfg.num_views:
            raise ValueError(f"reward model expects {self.cfg.num_views} views, got {v}")
        x = images.to(self.device).reshape(n * t * v, h, w, 3).permute(0, 3, 1, 2).float() / 127.5 - 1
        if (h, w) != (self.cfg.image_size, self.cfg.image_size):
            x = F.interpolate(
                x, size=(self.cfg.image_size, self.cfg.image_size), mode="bilinear", antialias=True
            )
        feats = self.encoder(x).reshape(n, t, -1)
        emb = self.prompt_embedding(self.prompt_ids(prompt, n))[:, None].expand(n, t, -1)
        return self.head(torch.cat([feats, emb], dim=-1))[..., 0]

    def forward(self, images: torch.Tensor, prompt: Sequence[str] | None = None) -> torch.Tensor:
        """Scores in [0, 1]: progress, or success probability."""
        return torch.sigmoid(self.logits(images, prompt))

    @torch.no_grad()
    def score(self, images: torch.Tensor, prompt: Sequence[str] | None = None) -> torch.Tensor:
        """The reward contract: ``images`` uint8 [N, T, V, H, W, 3] -> [N, T] in [0, 1] (no gradients)."""
        return self.forward(images, prompt).float()
