"""``Pi0Policy``: the pi0 / pi0.5 network behind the worldrl policy contract (predict / evaluate).

``predict`` denoises an action chunk (flow_ode, flow_sde or flow_noise) and returns, in ``replay``,
the whole denoising chain, which steps were stochastic and the prompt tokens, so ``evaluate`` can
recompute exactly the same log-prob under the current weights. ``flow_matching_loss`` is the imitation
(and advantage-conditioned imitation) objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from policy_and_value.envs.base import Observation
from policy_and_value.models.base import BasePolicy, PolicyOutput
from policy_and_value.models.pi0.configuration_pi0 import Pi0Config
from policy_and_value.models.pi0.gemma_layers import PrefixCache
from policy_and_value.models.pi0.lora import apply_lora, load_lora
from policy_and_value.models.pi0.modeling_pi0 import Pi0Model
from policy_and_value.models.pi0.normalize import Normalizer, Stats
from policy_and_value.models.pi0.preprocess import images_to_pixels
from policy_and_value.models.pi0.sampling import (
    NoiseHead,
    ValueHead,
    gaussian_entropy,
    gaussian_logprob,
    time_grid,
    transition,
)
from policy_and_value.models.pi0.tokenizer_pi0 import PromptTokenizer, discretize_state, format_prompt

# Parts of the policy outside the three transformer towers: they always train (LoRA, expert-only).
HEAD_MODULES = (
    "model.action_in_proj",
    "model.action_out_proj",
    "model.state_proj",
    "model.action_time_mlp_in",
    "model.action_time_mlp_out",
    "model.time_mlp_in",
    "model.time_mlp_out",
    "value_head",
    "noise_head",
)
PREFIX_MODULES = ("model.vision_tower", "model.multi_modal_projector", "model.language_model")
REPLAY_KEYS = ("chains", "denoise_mask", "lang_tokens", "lang_mask")


@dataclass
class Pi0Inputs:
    """Model-ready tensors for a batch of observations."""

    pixels: torch.Tensor | None  # [N, V, 3, S, S] in [-1, 1]
    image_mask: torch.Tensor | None  # [N, V] bool
    tokens: torch.Tensor  # [N, L] int64
    token_mask: torch.Tensor  # [N, L] bool
    state: torch.Tensor  # [N, max_state_dim] normalised, zero-padded
    task_id: torch.Tensor | None = None  # [N] int64, when the obs gives it
    time_left: torch.Tensor | None = None  # [N] float, when the obs gives it (``obs["time_left"]``)


class Pi0Policy(BasePolicy):
    """pi0 / pi0.5 VLA actor (and optional critic) over action chunks."""

    ddp_find_unused_parameters = True  # a loss may not touch every head (e.g. the prefix norm)

    def __init__(
        self, cfg: Pi0Config, tokenizer: PromptTokenizer, norm_stats: dict[str, Stats] | None = None
    ):
        super().__init__()
        if len(tokenizer) > cfg.vocab_size:
            raise ValueError(f"tokenizer has {len(tokenizer)} tokens but vocab_size is {cfg.vocab_size}")
        if tokenizer.max_len != cfg.max_token_len:
            tokenizer = PromptTokenizer(tokenizer.tokenizer, cfg.max_token_len)
        self.cfg = cfg
        self.action_dim = cfg.action_dim
        self.num_action_chunks = cfg.num_action_chunks
        self.logprob_type = cfg.logprob_type
        self.tokenizer = tokenizer
        self.model = Pi0Model(cfg, pad_token_id=tokenizer.pad_id)
        self.normalizer = Normalizer(cfg.norm_mode)
        if norm_stats:
            self.normalizer.set_stats(norm_stats)
        if cfg.noise_method == "flow_noise":
            self.noise_head = NoiseHead(
                cfg.expert.width, cfg.noise_head_hidden, cfg.max_action_dim, cfg.noise_std_range
            )
        if cfg.add_value_head:
            in_dim = cfg.prefix.width if cfg.value_after_vlm else cfg.expert.width
            if cfg.value_from_state:
                in_dim = cfg.max_state_dim + 1 + cfg.value_num_tasks
            out_dim = cfg.num_action_chunks if cfg.value_per_action else 1
            self.value_head = ValueHead(in_dim, cfg.value_hidden, out_dim)
        self.model.to(getattr(torch, cfg.dtype))
        if cfg.is_lora:
            apply_lora(self, cfg.lora_rank, cfg.lora_alpha, expert_only=cfg.train_expert_only)
            self._set_trainable(HEAD_MODULES, True)
            if cfg.lora_path:
                load_lora(self, cfg.lora_path)
        elif cfg.train_expert_only:
            self._set_trainable(PREFIX_MODULES, False)
        self._velocity = torch.compile(self.model.velocity) if cfg.use_torch_compile else self.model.velocity

    # ------------------------------------------------------------------ set-up helpers
    def _set_trainable(self, prefixes: Sequence[str], flag: bool) -> None:
        for name, param in self.named_parameters():
            if any(name == p or name.startswith(p + ".") for p in prefixes):
                param.requires_grad_(flag)

    def set_norm_stats(self, stats: dict[str, Stats]) -> None:
        """Install state/action statistics (e.g. computed from demonstrations)."""
        self.normalizer.set_stats(stats)

    @property
    def device(self) -> torch.device:
        return self.model.action_in_proj.weight.device

    def advantage_to_bin(self, advantages: torch.Tensor) -> torch.Tensor:
        """Continuous advantages [N] -> prompt classes [N] (``advantage_bin_edges``; x >= edge goes up)."""
        edges = torch.tensor(self.cfg.advantage_bin_edges, dtype=torch.float32, device=advantages.device)
        return torch.bucketize(advantages.float().contiguous(), edges, right=True)

    @property
    def best_advantage_bin(self) -> int:
        """The class requested at deployment in advantage-conditioned mode."""
        return self.cfg.num_advantage_bins - 1

    # ------------------------------------------------------------------ inputs
    def prompts(self, obs: Observation, state: torch.Tensor, advantage: torch.Tensor | None) -> list[str]:
        """The prompt texts for a batch (pi0.5 puts the discretised normalised state in them)."""
        tasks = [str(p) for p in list(obs["prompt"])]
        bins = discretize_state(state).tolist() if self.cfg.pi05 else [None] * len(tasks)
        adv = advantage.tolist() if advantage is not None else [None] * len(tasks)
        return [format_prompt(t, b, a) for t, b, a in zip(tasks, bins, adv, strict=True)]

    def prepare_inputs(
        self,
        obs: Observation,
        tokens: torch.Tensor | None = None,
        token_mask: torch.Tensor | None = None,
        advantage: torch.Tensor | None = None,
    ) -> Pi0Inputs:
        """Normalise/pad the state, preprocess images and tokenise the prompt (unless tokens are given)."""
        device = self.device
        state = self.normalizer.normalize("state", obs["state"].to(device))
        if state.shape[-1] > self.cfg.max_state_dim:
            raise ValueError(f"state has {state.shape[-1]} dims > max_state_dim {self.cfg.max_state_dim}")
        padded = torch.nn.functional.pad(state, (0, self.cfg.max_state_dim - state.shape[-1]))
        if tokens is None:
            tokens, token_mask = self.tokenizer(self.prompts(obs, state, advantage))
        pixels = image_mask = None
        images = obs.get("images")
        if images is not None:
            pixels = images_to_pixels(images.to(device), self.cfg.vision.image_size)
            image_mask = obs.get("image_mask")
            if image_mask is None:
                image_mask = torch.ones(pixels.shape[:2], dtype=torch.bool, device=device)
            image_mask = image_mask.to(device)
        task_id, left = obs.get("task_id"), obs.get("time_left")
        return Pi0Inputs(
            pixels, image_mask, tokens.to(device), token_mask.to(device), padded,
            None if task_id is None else torch.as_tensor(task_id).to(device),
            None if left is None else torch.as_tensor(left).to(device, torch.float32),
        )  # fmt: skip

    def encode(self, inputs: Pi0Inputs) -> PrefixCache:
        """The prefix cache; without gradients when the prefix is frozen (``train_expert_only``)."""
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.cfg.train_expert_only):
            return self.model.encode_prefix(
                inputs.pixels, inputs.image_mask, inputs.tokens, inputs.token_mask
            )

    def _state(self, inputs: Pi0Inputs) -> torch.Tensor | None:
        return None if self.cfg.pi05 else inputs.state

    # ------------------------------------------------------------------ denoising
    def denoise_step(
        self,
        prefix: PrefixCache,
        state: torch.Tensor | None,
        x_t: torch.Tensor,
        t: torch.Tensor,
        chosen: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std of the next chain element; rows with ``chosen`` False take the ODE step (std 0)."""
        dt = 1.0 / self.cfg.num_steps
        v, feats = self._velocity(prefix, state, x_t, t)
        ode_mean, zero = transition(x_t, v, t, dt, "flow_ode")
        if self.cfg.noise_method == "flow_ode" or not bool(chosen.any()):
            return ode_mean, zero
        learned = self.noise_head(feats) if self.cfg.noise_method == "flow_noise" else None
        mean, std = transition(x_t, v, t, dt, self.cfg.noise_method, self.cfg.noise_level, learned)
        pick = chosen[:, None, None]
        return torch.where(pick, mean, ode_mean), torch.where(pick, std, zero)

    def _sample_step_mask(self, n: int, mode: str) -> torch.Tensor:
        k = self.cfg.num_steps
        if mode != "train" or self.cfg.noise_method == "flow_ode":
            return torch.zeros(n, k, dtype=torch.bool, device=self.device)
        if self.cfg.joint_logprob:
            return torch.ones(n, k, dtype=torch.bool, device=self.device)
        idx = torch.randint(0, k, (n,), device=self.device)
        return torch.nn.functional.one_hot(idx, k).bool()

    def _reduce(self, per_elem: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Executed part [N, C, A] of a step-summed quantity, averaged over steps if asked, then
        reduced to the ``logprob_type`` shape."""
        x = per_elem[:, : self.num_action_chunks, : self.action_dim]
        if self.cfg.joint_logprob_reduce == "mean":
            x = x / steps.sum(-1).clamp(min=1)[:, None, None].to(x.dtype)
        if self.logprob_type == "token_level":
            return x
        x = x.sum(-1)
        return x if self.logprob_type == "action_level" else x.sum(-1)

    def value(self, prefix: PrefixCache | None, inputs: Pi0Inputs) -> torch.Tensor | None:
        """Critic: mean valid prefix token (``value_after_vlm``), the state, task and time left
        (``value_from_state``), or mean expert action-token output at x = 0, t = 1 (a deterministic
        function of the observation); [N] or [N, C]."""
        if not self.cfg.add_value_head:
            return None
        if self.cfg.value_from_state:
            feats = self._state_time_features(inputs)
        elif self.cfg.value_after_vlm:
            m = prefix.pad_mask[..., None].to(prefix.hidden.dtype)
            feats = (prefix.hidden * m).sum(1) / m.sum(1).clamp(min=1)
        else:
            n = prefix.pad_mask.shape[0]
            x = torch.zeros(n, self.cfg.chunk_size, self.cfg.max_action_dim, device=self.device)
            _, out = self._velocity(prefix, self._state(inputs), x, torch.ones(n, device=self.device))
            feats = out.mean(1)
        if self.cfg.detach_value_features:
            feats = feats.detach()
        v = self.value_head(feats)
        return v if self.cfg.value_per_action else v[:, 0]

    def _state_time_features(self, inputs: Pi0Inputs) -> torch.Tensor:
        """[normalised state, time left, task one-hot] for ``value_from_state``."""
        if inputs.time_left is None or inputs.task_id is None:
            raise ValueError(
                "model.pi0.value_from_state=true: the critic reads obs['time_left'] and obs['task_id'], "
                "which this env does not give (the simulators and the world-model env do)"
            )
        k, top = self.cfg.value_num_tasks, int(inputs.task_id.max())
        if top >= k:
            raise ValueError(f"model.pi0.value_num_tasks={k}: the env has task_id {top}")
        task = torch.nn.functional.one_hot(inputs.task_id.long(), k).to(inputs.state.dtype)
        return torch.cat([inputs.state, inputs.time_left[:, None].to(inputs.state.dtype), task], dim=-1)

    # ------------------------------------------------------------------ contract
    @torch.no_grad()
    def predict(
        self, obs: Observation, mode: str = "train", noise: torch.Tensor | None = None
    ) -> PolicyOutput:
        """Denoise one chunk per observation; ``mode="eval"`` is deterministic (ODE) given the initial
        ``noise`` [N, chunk_size, max_action_dim] (drawn when None; the server passes its own)."""
        advantage = None
        if self.cfg.with_advantage_condition:
            advantage = torch.full((len(obs["prompt"]),), self.best_advantage_bin, dtype=torch.long)
        inputs = self.prepare_inputs(obs, advantage=advantage)
        prefix = self.encode(inputs)
        state = self._state(inputs)
        n, k = inputs.tokens.shape[0], self.cfg.num_steps
        shape = (n, self.cfg.chunk_size, self.cfg.max_action_dim)
        x = (
            torch.randn(shape, device=self.device)
            if noise is None
            else noise.to(self.device).expand(shape).clone()
        )
        steps = self._sample_step_mask(n, mode)
        grid = time_grid(k, self.device)
        chain, logp, ent = [x], torch.zeros_like(x), torch.zeros_like(x)
        for i in range(k):
            mean, std = self.denoise_step(prefix, state, x, grid[i].expand(n), steps[:, i])
            x = mean + std * torch.randn_like(mean)
            logp = logp + gaussian_logprob(x, mean, std)
            ent = ent + gaussian_entropy(std)
            chain.append(x)
        actions = x[:, : self.num_action_chunks, : self.action_dim]
        actions = self.normalizer.unnormalize("actions", actions)
        replay = {
            "chains": torch.stack(chain, dim=1),
            "denoise_mask": steps,
            "lang_tokens": inputs.tokens,
            "lang_mask": inputs.token_mask,
        }
        # a served policy gets no time left: its state critic is skipped there (actions need no value)
        served = mode == "eval" and self.cfg.value_from_state and inputs.time_left is None
        value = None if served else self.value(prefix, inputs)
        return PolicyOutput(actions, self._reduce(logp, steps), value, replay)

    def evaluate(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Log-prob, value and entropy of the recorded denoising chain under the current weights."""
        chains = batch["chains"].to(self.device).float()
        steps = batch["denoise_mask"].to(self.device).bool()
        inputs = self.prepare_inputs(batch["obs"], batch["lang_tokens"], batch["lang_mask"])
        prefix = self.encode(inputs)
        state = self._state(inputs)
        n = chains.shape[0]
        grid = time_grid(self.cfg.num_steps, self.device)
        logp = torch.zeros_like(chains[:, 0])
        ent = torch.zeros_like(chains[:, 0])
        rows = torch.arange(n, device=self.device)
        if bool(steps.any()) and int(steps.sum(-1).max()) == 1:  # one stochastic step per sample
            idx = steps.float().argmax(-1)
            mean, std = self.denoise_step(prefix, state, chains[rows, idx], grid[idx], steps.any(-1))
            logp, ent = gaussian_logprob(chains[rows, idx + 1], mean, std), gaussian_entropy(std)
        elif bool(steps.any()):
            for i in range(self.cfg.num_steps):
                if bool(steps[:, i].any()):
                    mean, std = self.denoise_step(prefix, state, chains[:, i], grid[i].expand(n), steps[:, i])
                    logp = logp + gaussian_logprob(chains[:, i + 1], mean, std)
                    ent = ent + gaussian_entropy(std)
        return self._reduce(logp, steps), self.value(prefix, inputs), self._reduce(ent, steps)

    def critic(self, batch: dict[str, Any]) -> torch.Tensor | None:
        """Value of recorded observations (with their recorded prompt tokens), without the denoising
        chain: what ``evaluate`` returns as value, for losses that need no log-prob."""
        inputs = self.prepare_inputs(batch["obs"], batch["lang_tokens"], batch["lang_mask"])
        # the state critic reads no network features: no prefix to encode
        return self.value(None if self.cfg.value_from_state else self.encode(inputs), inputs)

    # ------------------------------------------------------------------ imitation
    def flow_matching_loss(self, batch: dict[str, Any]) -> torch.Tensor:
        """Flow-matching MSE on the executed chunk ``batch["actions"] [N, C, A]`` (env units).

        Optional: ``advantage_bin`` [N] (advantage-conditioned mode; -1 = unconditioned prompt),
        ``action_mask`` [N, C] (1 where the action was executed), ``noise`` [N, H, D_max], ``time`` [N].
        """
        advantage = batch.get("advantage_bin") if self.cfg.with_advantage_condition else None
        inputs = self.prepare_inputs(batch["obs"], advantage=advantage)
        actions = self.normalizer.normalize("actions", batch["actions"].to(self.device))
        n, c, a = actions.shape
        if c > self.cfg.chunk_size or a > self.cfg.max_action_dim:
            raise ValueError(f"actions {tuple(actions.shape)} exceed chunk_size/max_action_dim")
        pad = (0, self.cfg.max_action_dim - a, 0, self.cfg.chunk_size - c)
        target = torch.nn.functional.pad(actions, pad)
        valid = torch.ones(n, c, a, device=self.device)
        if batch.get("action_mask") is not None:
            valid = valid * batch["action_mask"].to(self.device).float()[..., None]
        valid = torch.nn.functional.pad(valid, pad)
        noise = batch.get("noise")
        noise = torch.randn_like(target) if noise is None else noise.to(self.device)
        t = batch.get("time")
        if t is None:
            t = torch.distributions.Beta(1.5, 1.0).sample((n,)).to(self.device) * 0.999 + 0.001
        err = self.model.flow_matching_error(
            self.encode(inputs), self._state(inputs), target, noise, t.to(self.device)
        )
        return (err * valid).sum() / valid.sum().clamp(min=1)

    @torch.no_grad()
    def sample_actions(self, obs: Observation) -> torch.Tensor:
        """Deterministic actions [N, C, A] in env units (deployment)."""
        return self.predict(obs, mode="eval").actions
