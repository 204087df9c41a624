"""State world model: an ensemble of MLPs that predicts the states an action chunk leads to, and a
success classifier on states. It grounds imagination in what the simulator's state says happened.

Each of ``ensemble_size`` members maps (normalised state, the chunk's actions, task) to the state after
every action of the chunk (as changes from the chunk's start, scaled per dimension by the typical change
over one chunk), a second head maps (state, task) to the logit that the task is solved in that state, and
an optional third (``reward_head``) to the simulator's reward for the action that led to that state (its
shaped reward is a function of the state: ``experiments.harness.state_reward_fit``).

With ``latent_components`` the state is what a robot records instead of the simulator's: proprioception followed
by the leading principal components of the cameras' normalised VAE latents (the observation-only model of
``setting: observation_only``); its frames are those components mapped back to latents and decoded by the VAE.
Members differ by initialisation and training batches; each member rolls its own trajectory, so their
disagreement grows where the model has not seen the data (``disagreement``: the hallucination signal).
All members run as one batched matmul per layer (``EnsembleLinear``), no Python loop over members.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch import nn

from toolkits.base.model_dir import ModelDirMixin, read_config_json, write_config_json


@dataclass
class StateModelConfig:
    """Sizes of the state model; saved as ``config.json`` beside the weights."""

    state_dim: int
    action_dim: int
    action_chunk: int
    prompts: list[str] = field(default_factory=list)  # the tasks it knows (one-hot input)
    ensemble_size: int = 5
    hidden: int = 256
    layers: int = 3
    # the renderer: normalised dynamics-model VAE latents [views, channels, h, w] of the frame a state shows
    # (empty: no renderer); frames are the dynamics model's VAE decoding of them
    latent_shape: list[int] = field(default_factory=list)
    render_hidden: int = 512
    reward_head: bool = False  # also predict the reward of the action that led to a state
    # > 0: the state's last latent_components numbers are principal components of the frames' VAE latents
    # (latent_shape), the numbers before them proprioception; frames come from them linearly, no renderer network
    latent_components: int = 0
    # how an observation model's latent numbers are made: pca (design A: the latents' principal components, frames
    # linear in them) or learned (design B: a code in (-1, 1) from an encoder trained with the dynamics, frames from
    # a decoder of the code and the proprioception; world_models/latent_codec.py)
    latent_encoder: str = "pca"
    # a value head: the probability that the episode succeeds from a state, discounted by value_discount per action
    # to its end (learned from the episodes' outcomes alone; a potential for a dense imagined reward)
    value_head: bool = False
    value_discount: float = 0.98
    codec_width: int = 32  # channels of the learned encoder's and decoder's convolutions

    def __post_init__(self) -> None:
        checks = [
            (self.state_dim >= 1 and self.action_dim >= 1, "state_dim and action_dim must be >= 1"),
            (self.action_chunk >= 1, "action_chunk must be >= 1"),
            (self.ensemble_size >= 1, "ensemble_size must be >= 1"),
            (self.hidden >= 1 and self.layers >= 1, "hidden and layers must be >= 1"),
            (len(self.prompts) >= 1, "prompts must name at least one task"),
            (len(self.latent_shape) in (0, 4), "latent_shape must be [] or [views, channels, h, w]"),
            (0 <= self.latent_components < self.state_dim, "latent_components must be in [0, state_dim)"),
            (not self.latent_components or self.latent_shape, "latent_components needs latent_shape"),
            (self.latent_encoder in ("pca", "learned"), "latent_encoder must be pca or learned"),
            (0.0 < self.value_discount <= 1.0, "value_discount must be in (0, 1]"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"StateModelConfig: {message}")

    def save(self, path: str | Path) -> None:
        """Write ``config.json``."""
        write_config_json(path, self, "worldrl_state_model")

    @classmethod
    def load(cls, path: str | Path) -> StateModelConfig:
        """Read ``config.json``; unknown keys are an error."""
        return read_config_json(cls, path, "state-model")


class EnsembleLinear(nn.Module):
    """``K`` independent linear layers applied as one batched matmul: [K, N, in] -> [K, N, out]."""

    def __init__(self, members: int, d_in: int, d_out: int):
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)  # nn.Linear's default initialisation, per member
        self.weight = nn.Parameter(torch.empty(members, d_in, d_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(members, 1, d_out).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


def ensemble_mlp(members: int, d_in: int, hidden: int, layers: int, d_out: int) -> nn.Sequential:
    """``layers`` hidden SiLU layers of width ``hidden`` per member."""
    dims = [d_in] + [hidden] * layers
    parts: list[nn.Module] = []
    for a, b in zip(dims[:-1], dims[1:]):
        parts += [EnsembleLinear(members, a, b), nn.SiLU()]
    return nn.Sequential(*parts, EnsembleLinear(members, dims[-1], d_out))


class StateModel(ModelDirMixin, nn.Module):
    """``rollout_chunk(states, actions, prompts)`` -> every member's states after each action of the chunk;
    ``success_prob(states, prompts)`` -> the ensemble's probability that each state solves its task."""

    config_class = StateModelConfig
    model_kind = "state model"

    def __init__(self, cfg: StateModelConfig):
        super().__init__()
        self.cfg = cfg
        k, s, c = cfg.ensemble_size, cfg.state_dim, cfg.action_chunk
        tasks = len(cfg.prompts)
        self.dynamics = ensemble_mlp(k, s + c * cfg.action_dim + tasks, cfg.hidden, cfg.layers, c * s)
        self.success = ensemble_mlp(k, s + tasks, cfg.hidden, cfg.layers, 1)
        if cfg.value_head:
            self.value = ensemble_mlp(k, s + tasks, cfg.hidden, cfg.layers, 1)
        if cfg.reward_head:
            self.reward = ensemble_mlp(k, s + tasks, cfg.hidden, cfg.layers, 1)
            self.register_buffer("reward_std", torch.ones(()))  # the head predicts reward / reward_std
        if cfg.latent_components and cfg.latent_encoder == "learned":  # design B: a code from an encoder
            from world_models.latent_codec import LatentDecoder, LatentEncoder

            self.encoder = LatentEncoder(cfg.latent_shape, cfg.latent_components, cfg.codec_width)
            self.decoder = LatentDecoder(cfg.latent_shape, s, cfg.codec_width)
        elif cfg.latent_components:  # the principal axes of the latents: state tail -> latents, linearly
            size = math.prod(cfg.latent_shape)
            self.register_buffer("latent_mean", torch.zeros(size))
            self.register_buffer("latent_basis", torch.zeros(size, cfg.latent_components))
        elif cfg.latent_shape:
            width = cfg.render_hidden
            self.renderer = nn.Sequential(
                nn.Linear(s + tasks, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU(),
                nn.Linear(width, width), nn.SiLU(), nn.Linear(width, math.prod(cfg.latent_shape)),
            )  # fmt: skip
        self.register_buffer("state_mean", torch.zeros(s))
        self.register_buffer("state_std", torch.ones(s))
        self.register_buffer("delta_std", torch.ones(s))  # typical change of each dimension over one chunk
        self._prompt_index = {p: i for i, p in enumerate(cfg.prompts)}

    @property
    def device(self) -> torch.device:
        return self.state_mean.device

    @property
    def proprio_dim(self) -> int:
        """How many of the state's numbers are the robot's (all of them but the latents' components)."""
        return self.cfg.state_dim - self.cfg.latent_components

    @torch.no_grad()
    def fit_latent_basis(self, latents: torch.Tensor) -> torch.Tensor:
        """The principal axes of normalised VAE latents [M, V, C, h, w] (an observation model's frames);
        returns the variance they keep, a fraction."""
        flat = latents.reshape(len(latents), -1).float()
        mean = flat.mean(0)
        _, values, axes = torch.linalg.svd(flat - mean, full_matrices=False)
        self.latent_mean.copy_(mean)
        self.latent_basis.copy_(axes[: self.cfg.latent_components].T)
        power = values.pow(2)
        return power[: self.cfg.latent_components].sum() / power.sum().clamp(min=1e-12)

    @property
    def learned_codec(self) -> bool:
        """Whether the latent numbers are a learned code (design B) rather than principal components."""
        return bool(self.cfg.latent_components) and self.cfg.latent_encoder == "learned"

    def latent_coefficients(self, latents: torch.Tensor) -> torch.Tensor:
        """The components (or the learned code) of frames' normalised VAE latents [N, V, C, h, w] ->
        [N, latent_components]."""
        if self.learned_codec:
            return self.encoder(latents.to(self.device))
        flat = latents.reshape(len(latents), -1).to(self.latent_mean) - self.latent_mean
        return flat @ self.latent_basis

    def observe(self, proprio: torch.Tensor, latents: torch.Tensor) -> torch.Tensor:
        """An observation model's state of what a robot records: proprioception [N, P] and the frames'
        normalised VAE latents [N, V, C, h, w] -> [N, S] (proprioception, then the latents' components)."""
        coefficients = self.latent_coefficients(latents)
        return torch.cat([proprio.to(coefficients), coefficients], dim=-1)

    def task_one_hot(self, prompts: Sequence[str]) -> torch.Tensor:
        """[N, tasks] one-hot of each env's prompt; an unknown prompt is an error naming the known ones."""
        unknown = sorted({p for p in prompts if p not in self._prompt_index})
        if unknown:
            raise ValueError(f"state model: unknown prompts {unknown}; it knows {self.cfg.prompts}")
        ids = torch.tensor([self._prompt_index[p] for p in prompts], device=self.device)
        return nn.functional.one_hot(ids, len(self.cfg.prompts)).float()

    @torch.no_grad()
    def fit_statistics(self, states: torch.Tensor, chunk_deltas: torch.Tensor) -> None:
        """Normalisers from training data: states [M, S] and state changes over one chunk [M', S]."""
        self.state_mean.copy_(states.mean(0))
        self.state_std.copy_(states.std(0).clamp(min=1e-3))
        self.delta_std.copy_(chunk_deltas.std(0).clamp(min=1e-6))

    def _normalise(self, states: torch.Tensor) -> torch.Tensor:
        return (states - self.state_mean) / self.state_std

    def rollout_chunk(self, states: torch.Tensor, actions: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        """states [K, N, S] (one per member), actions [N, C, A] (or [K, N, C, A]), tasks one-hot [N, T]
        (or [K, N, T]) -> [K, N, C, S]: each member's state after each action of the chunk."""
        k, n, s = states.shape
        acts = actions.reshape(*actions.shape[:-2], -1).expand(k, n, -1)
        inputs = torch.cat([self._normalise(states), acts, tasks.expand(k, n, -1)], dim=-1)
        deltas = self.dynamics(inputs).reshape(k, n, self.cfg.action_chunk, s) * self.delta_std
        out = states[:, :, None] + deltas
        if self.learned_codec:  # the code stays in the encoder's range
            p = self.proprio_dim
            out = torch.cat([out[..., :p], out[..., p:].clamp(-1.0, 1.0)], dim=-1)
        return out

    def _state_head(self, head: nn.Module, states: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        """Apply a per-member head on (state, task): states [K, N, ..., S] (member k's head reads member
        k's states), tasks one-hot [N, T] (or [K, N, T]) -> [K, N, ...]."""
        k, n = states.shape[:2]
        flat = states.reshape(k, n, -1, states.shape[-1])
        task = tasks.expand(k, n, -1)[:, :, None].expand(k, n, flat.shape[2], -1)
        inputs = torch.cat([self._normalise(flat), task], dim=-1).reshape(
            k, -1, flat.shape[-1] + task.shape[-1]
        )
        return head(inputs).reshape(k, n, *states.shape[2:-1])

    def success_logits(self, states: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        """Each member's logit that the task is solved: states [K, N, ..., S] -> [K, N, ...]."""
        return self._state_head(self.success, states, tasks)

    def value_logits(self, states: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        """Each member's logit of the discounted chance of success from each state: [K, N, ..., S] -> [K, N, ...];
        an error for a model trained without ``value_head``."""
        if not self.cfg.value_head:
            raise ValueError("this state model has no value head (it was trained without model.value_head)")
        return self._state_head(self.value, states, tasks)

    def reward_values(self, states: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        """Each member's reward of the action that led to each state, in the data's units: states
        [K, N, ..., S] -> [K, N, ...]; an error for a model trained without ``reward_head``."""
        if not self.cfg.reward_head:
            raise ValueError("this state model has no reward head (it was trained without model.reward_head)")
        return self._state_head(self.reward, states, tasks) * self.reward_std

    def with_reward_head(self) -> StateModel:
        """This model with a new, untrained reward head (``reward_std`` 1) and every other weight unchanged:
        a shipped model gains the shaped reward without retraining what it already predicts."""
        if self.cfg.reward_head:
            return self
        model = StateModel(replace(self.cfg, reward_head=True)).to(self.device)
        missing, unexpected = model.load_state_dict(self.state_dict(), strict=False)
        if unexpected or any(not key.startswith("reward") for key in missing):
            raise RuntimeError(
                f"state model: adding a reward head left {missing} missing, {unexpected} unexpected"
            )
        return model.train(self.training)

    @torch.no_grad()
    def success_prob(self, states: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        """The members' mean success probability: states [K, N, ..., S] -> [N, ...]."""
        return torch.sigmoid(self.success_logits(states, tasks)).mean(0)

    def render_latents(self, states: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        """The dynamics model's normalised VAE latents of the frame each state shows: states [N, S],
        tasks one-hot [N, T] -> [N, V, C, h, w] (decode them with ``DynamicsModel.decode``)."""
        if not self.cfg.latent_shape:
            raise ValueError(
                "this state model has no renderer (it was trained without render.dynamics_model_dir)"
            )
        if self.learned_codec:
            return self.decoder(self._normalise(states))
        if self.cfg.latent_components:
            coefficients = states[..., self.proprio_dim :]
            return (self.latent_mean + coefficients @ self.latent_basis.T).reshape(
                len(states), *self.cfg.latent_shape
            )
        out = self.renderer(torch.cat([self._normalise(states), tasks], dim=-1))
        return out.reshape(len(states), *self.cfg.latent_shape)

    def disagreement(self, states: torch.Tensor) -> torch.Tensor:
        """How far the members' states [K, N, S] disagree, in units of one chunk's typical change: the std
        over members of each dimension divided by ``delta_std``, averaged over the dimensions that move."""
        moving = self.delta_std > 1e-5
        spread = states.std(0, correction=0)[..., moving] / self.delta_std[moving]
        return spread.mean(-1)
