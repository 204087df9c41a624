"""A small image+state actor-critic over action chunks, for fast runs and for checking the RL stack.

Encoders: a CNN shared by all camera views (features concatenated) when the env gives images and
``policy_type`` is ``cnn_actor_critic``; an MLP over the (optionally running-normalised) state; a
task embedding for multi-task runs. Heads: a Gaussian over the whole chunk [C, A] with a learned,
state-independent log-std (or a categorical per chunk step for discrete actions), and a value head.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.distributions import Categorical, Normal

from policy_and_value.config.schema import ModelConfig
from policy_and_value.envs.base import EnvSpec, Observation
from policy_and_value.models.base import BasePolicy, PolicyOutput

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "gelu": nn.GELU}


def _init(layer: nn.Module, gain: float = math.sqrt(2)) -> nn.Module:
    """Orthogonal weights, zero bias (the PPO default)."""
    if isinstance(layer, nn.Linear | nn.Conv2d):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    return layer


class RunningNorm(nn.Module):
    """Running mean/variance of the state vector, kept in buffers so they travel with the weights."""

    def __init__(self, dim: int, clip: float = 10.0):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.tensor(1e-4))
        self.clip = clip

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Parallel-variance update with a batch [N, dim]."""
        n = x.shape[0]
        if n == 0:
            return
        b_mean, b_var = x.mean(0), x.var(0, unbiased=False)
        delta = b_mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + b_var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-self.clip, self.clip)


class ImageEncoder(nn.Module):
    """Conv stack shared by the V camera views; outputs their concatenated features."""

    def __init__(self, image_shape: tuple[int, int, int], channels: list[int], out_dim: int):
        super().__init__()
        views, height, width = image_shape
        layers: list[nn.Module] = []
        c_in = 3
        for c in channels:
            layers += [_init(nn.Conv2d(c_in, c, 4, stride=2, padding=1)), nn.ReLU()]
            c_in = c
        self.conv = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.proj = nn.Sequential(_init(nn.Linear(c_in * 16 * views, out_dim)), nn.ReLU())
        self.views = views

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        n, v = images.shape[:2]
        x = images.reshape(n * v, *images.shape[2:]).permute(0, 3, 1, 2).float() / 255.0
        return self.proj(self.conv(x).reshape(n, -1))


class ActorCritic(BasePolicy):
    """Gaussian (or categorical) actor over action chunks with a value head."""

    def __init__(
        self,
        cfg: ModelConfig,
        spec: EnvSpec,
        logprob_type: str = "action_level",
        value_per_action: bool = False,
    ):
        super().__init__()
        self.spec = spec
        self.logprob_type = logprob_type
        self.action_dim = cfg.action_dim or spec.action_dim
        self.num_action_chunks = cfg.num_action_chunks or spec.num_action_chunks
        self.discrete = spec.discrete_actions
        act = ACTIVATIONS[cfg.activation]
        hidden = cfg.hidden_dims

        self.obs_norm = RunningNorm(spec.state_dim) if cfg.obs_norm else None
        self.use_images = cfg.policy_type == "cnn_actor_critic" and spec.image_shape is not None
        feat = spec.state_dim
        if self.use_images:
            self.image_encoder = ImageEncoder(spec.image_shape, cfg.image_channels, hidden[0])
            feat += hidden[0]
        self.task_embed = nn.Embedding(len(spec.tasks), 8) if len(spec.tasks) > 1 else None
        feat += 8 if self.task_embed is not None else 0

        def trunk() -> nn.Sequential:
            layers: list[nn.Module] = []
            d = feat
            for h in hidden:
                layers += [_init(nn.Linear(d, h)), act()]
                d = h
            return nn.Sequential(*layers)

        self.actor_trunk = trunk()
        C, A = self.num_action_chunks, self.action_dim
        out = C * (self.discrete if self.discrete else A)
        self.actor_head = _init(nn.Linear(hidden[-1], out), gain=0.01)
        if not self.discrete:
            self.log_std = nn.Parameter(torch.full((C, A), cfg.init_log_std))
        self.add_value_head = cfg.add_value_head
        if cfg.add_value_head:
            self.critic_trunk = trunk()
            self.value_head = _init(nn.Linear(hidden[-1], C if value_per_action else 1), gain=1.0)
        self.value_per_action = value_per_action

    # ------------------------------------------------------------------ internals
    def _features(self, obs: Observation) -> torch.Tensor:
        state = obs["state"].float()
        if self.obs_norm is not None:
            state = self.obs_norm(state)
        parts = [state]
        if self.use_images:
            parts.append(self.image_encoder(obs["images"]))
        if self.task_embed is not None:
            parts.append(self.task_embed(obs["task_id"].long()))
        return torch.cat(parts, -1)

    def _dist(self, feats: torch.Tensor) -> Normal | Categorical:
        n = feats.shape[0]
        logits = self.actor_head(self.actor_trunk(feats))
        if self.discrete:
            return Categorical(logits=logits.view(n, self.num_action_chunks, self.discrete))
        mean = logits.view(n, self.num_action_chunks, self.action_dim)
        return Normal(mean, self.log_std.exp().expand_as(mean))

    def _value(self, feats: torch.Tensor) -> torch.Tensor | None:
        if not self.add_value_head:
            return None
        v = self.value_head(self.critic_trunk(feats))
        return v if self.value_per_action else v.squeeze(-1)

    def _reduce(self, per_token: torch.Tensor) -> torch.Tensor:
        """[N, C, A] -> the shape ``logprob_type`` asks for."""
        if self.logprob_type == "token_level":
            return per_token
        per_action = per_token.sum(-1)
        return per_action if self.logprob_type == "action_level" else per_action.sum(-1)

    def _logprob_entropy(
        self, dist: Normal | Categorical, raw: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.discrete:
            lp = dist.log_prob(raw[..., 0].long()).unsqueeze(-1)
            ent = dist.entropy().unsqueeze(-1)
        else:
            lp, ent = dist.log_prob(raw), dist.entropy()
        return self._reduce(lp), self._reduce(ent)

    # ------------------------------------------------------------------ contract
    def predict(self, obs: Observation, mode: str = "train") -> PolicyOutput:
        """Sample (train) or take the mode (eval) of the chunk distribution."""
        feats = self._features(obs)
        dist = self._dist(feats)
        if self.discrete:
            choice = dist.sample() if mode == "train" else dist.probs.argmax(-1)
            raw = choice.unsqueeze(-1).float()
        else:
            raw = dist.sample() if mode == "train" else dist.mean
        logprob, _ = self._logprob_entropy(dist, raw)
        return PolicyOutput(
            actions=raw, logprob=logprob, value=self._value(feats), replay={"raw_actions": raw}
        )

    def evaluate(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Log-prob, value and entropy of the recorded raw actions under the current weights."""
        feats = self._features(batch["obs"])
        logprob, entropy = self._logprob_entropy(self._dist(feats), batch["raw_actions"])
        return logprob, self._value(feats), entropy

    def update_obs_norm(self, state: torch.Tensor) -> None:
        """Fold a batch of states into the running statistics (called by the actor after an update)."""
        if self.obs_norm is not None:
            self.obs_norm.update(state.float())
