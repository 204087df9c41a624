"""The pi0 / pi0.5 network: PaliGemma prefix, Gemma action expert, and the flow-matching velocity.

Layout (module names follow openpi's PyTorch port so that its checkpoints map one-to-one):
``vision_tower`` (SigLIP) -> ``multi_modal_projector`` -> ``language_model`` (Gemma) over
[image tokens of every view, prompt tokens]; ``action_expert`` (Gemma without embeddings) over the
suffix [state token (pi0 only), noisy action tokens]. pi0 mixes the flow time into the action tokens
(``action_time_mlp_*``); pi0.5 feeds it through ``time_mlp_*`` into adaRMS norms and moves the state
into the prompt as discrete tokens. Time follows openpi: t=1 is pure noise, t=0 the clean chunk.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GemmaModel, SiglipVisionConfig, SiglipVisionModel

from policy_and_value.models.pi0.configuration_pi0 import Pi0Config
from policy_and_value.models.pi0.gemma_layers import (
    PrefixCache,
    build_expert,
    gemma_config,
    run_expert,
    run_prefix,
)


def sinusoidal_time_embedding(
    t: torch.Tensor, dim: int, min_period: float = 4e-3, max_period: float = 4.0
) -> torch.Tensor:
    """[N] times in [0, 1] -> [N, dim] sin/cos features with periods spaced geometrically."""
    fraction = torch.linspace(0.0, 1.0, dim // 2, dtype=torch.float64, device=t.device)
    period = min_period * (max_period / min_period) ** fraction
    angle = (2 * math.pi / period)[None, :] * t.double()[:, None]
    return torch.cat([angle.sin(), angle.cos()], dim=-1).float()


def siglip_config(cfg: Pi0Config) -> SiglipVisionConfig:
    """SigLIP vision config without the pooling head (PaliGemma keeps every patch token)."""
    v = cfg.vision
    return SiglipVisionConfig(
        hidden_size=v.hidden,
        intermediate_size=v.mlp_dim,
        num_hidden_layers=v.depth,
        num_attention_heads=v.num_heads,
        patch_size=v.patch_size,
        image_size=v.image_size,
        hidden_act="gelu_pytorch_tanh",
        layer_norm_eps=1e-6,
        vision_use_head=False,
    )


class Pi0Model(nn.Module):
    """PaliGemma + action expert; ``encode_prefix`` once per observation, ``velocity`` per step."""

    def __init__(self, cfg: Pi0Config, pad_token_id: int | None = 0):
        super().__init__()
        self.cfg = cfg
        width = cfg.expert.width
        self.vision_tower = SiglipVisionModel(siglip_config(cfg))
        self.multi_modal_projector = nn.Linear(cfg.vision.hidden, cfg.prefix.width)
        self.language_model = GemmaModel(gemma_config(cfg.prefix, cfg.vocab_size, pad_token_id))
        self.action_expert = build_expert(cfg.expert, adarms=cfg.pi05)
        self.action_in_proj = nn.Linear(cfg.max_action_dim, width)
        self.action_out_proj = nn.Linear(width, cfg.max_action_dim)
        if cfg.pi05:
            self.time_mlp_in = nn.Linear(width, width)
            self.time_mlp_out = nn.Linear(width, width)
        else:
            self.state_proj = nn.Linear(cfg.max_state_dim, width)
            self.action_time_mlp_in = nn.Linear(2 * width, width)
            self.action_time_mlp_out = nn.Linear(width, width)
        self.gradient_checkpointing = False
        self.set_gradient_checkpointing(cfg.gradient_checkpointing)

    def set_gradient_checkpointing(self, enabled: bool) -> None:
        """Recompute activations in the backward pass (all three towers) to save memory."""
        if enabled:
            self.vision_tower.activation_checkpointing_enable({"use_reentrant": False})
        elif self.gradient_checkpointing:
            self.vision_tower.activation_checkpointing_disable()
        self.gradient_checkpointing = enabled

    # ------------------------------------------------------------------ prefix
    def embed_images(self, pixels: torch.Tensor) -> torch.Tensor:
        """[N, V, 3, H, W] in [-1, 1] -> image tokens [N, V * T, W]."""
        n, views = pixels.shape[:2]
        dtype = self.multi_modal_projector.weight.dtype
        feats = self.vision_tower(pixel_values=pixels.flatten(0, 1).to(dtype)).last_hidden_state
        tokens = self.multi_modal_projector(feats)
        return tokens.reshape(n, views * tokens.shape[1], -1)

    def encode_prefix(
        self,
        pixels: torch.Tensor | None,
        image_mask: torch.Tensor | None,
        tokens: torch.Tensor,
        token_mask: torch.Tensor,
    ) -> PrefixCache:
        """Run the prefix (image tokens of every view, then the prompt) and keep its KV cache."""
        parts, masks = [], []
        if pixels is not None and pixels.shape[1] > 0:
            img = self.embed_images(pixels)
            per_view = img.shape[1] // pixels.shape[1]
            parts.append(img)
            masks.append(image_mask.bool().repeat_interleave(per_view, dim=1))
        # Gemma's scaled word embedding already multiplies by sqrt(width), as pi0 does for language
        parts.append(self.language_model.embed_tokens(tokens).to(self.multi_modal_projector.weight.dtype))
        masks.append(token_mask.bool())
        embeds, pad = torch.cat(parts, dim=1), torch.cat(masks, dim=1)
        return run_prefix(self.language_model, embeds, pad, checkpoint=self._ckpt())

    # ------------------------------------------------------------------ suffix
    def embed_suffix(
        self, state: torch.Tensor | None, x_t: torch.Tensor, t: torch.Tensor
    ) -> tuple[torch.Tensor, list[int], torch.Tensor | None]:
        """Suffix tokens, their attention blocks and the adaRMS condition (None for pi0).

        pi0: [state] then the H action tokens, each block opened by a 1 (the state sees only the
        prefix and itself; actions see prefix, state and each other). pi0.5: the H action tokens.
        """
        dtype = self.action_in_proj.weight.dtype
        time_emb = sinusoidal_time_embedding(t, self.cfg.expert.width).to(dtype)
        actions = self.action_in_proj(x_t.to(dtype))
        horizon = x_t.shape[1]
        if self.cfg.pi05:
            cond = F.silu(self.time_mlp_out(F.silu(self.time_mlp_in(time_emb))))
            return actions, [1] + [0] * (horizon - 1), cond
        mixed = torch.cat([actions, time_emb[:, None, :].expand_as(actions)], dim=-1)
        action_tokens = self.action_time_mlp_out(F.silu(self.action_time_mlp_in(mixed)))
        state_token = self.state_proj(state.to(dtype))[:, None, :]
        return torch.cat([state_token, action_tokens], dim=1), [1, 1] + [0] * (horizon - 1), None

    def velocity(
        self, prefix: PrefixCache, state: torch.Tensor | None, x_t: torch.Tensor, t: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Flow velocity v(x_t, t) [N, H, D_max] (float32) and the expert's action-token outputs."""
        embeds, blocks, cond = self.embed_suffix(state, x_t, t)
        out = run_expert(self.action_expert, embeds, prefix, blocks, cond, checkpoint=self._ckpt())
        out = out[:, -x_t.shape[1] :]
        return self.action_out_proj(out).float(), out

    def flow_matching_error(
        self,
        prefix: PrefixCache,
        state: torch.Tensor | None,
        actions: torch.Tensor,
        noise: torch.Tensor,
        t: torch.Tensor,
    ) -> torch.Tensor:
        """Per-element squared error [N, H, D_max] between v(x_t, t) and the target noise - actions."""
        tt = t[:, None, None]
        x_t = tt * noise + (1 - tt) * actions
        v, _ = self.velocity(prefix, state, x_t, t)
        return (v - (noise - actions)).pow(2)

    def _ckpt(self) -> bool:
        return self.gradient_checkpointing and self.training


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Parameter counts per top-level module plus ``total`` (works on the meta device)."""
    counts: dict[str, int] = {}
    for name, param in model.named_parameters():
        top = name.split(".")[0]
        counts[top] = counts.get(top, 0) + param.numel()
    counts["total"] = sum(counts.values())
    return counts
