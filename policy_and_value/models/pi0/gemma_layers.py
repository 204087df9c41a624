"""Gemma towers for pi0: building them from transformers configs and running them layer by layer.

The prefix (images + prompt) attends bidirectionally within itself and never to the suffix, so its
per-layer keys/values can be computed once and reused: each action-expert layer attends to the keys and
values of the same prefix layer concatenated with its own (pi0's blockwise-causal attention). Running
the two towers separately this way is exactly the joint forward of the published model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn
from transformers import GemmaConfig, GemmaModel
from transformers.models.gemma.modeling_gemma import apply_rotary_pos_emb

from policy_and_value.models.pi0.configuration_pi0 import GemmaSpec


class AdaRMSNorm(nn.Module):
    """Timestep-adaptive RMS norm (pi0.5): a zero-initialised ``dense`` maps the condition to scale,
    shift and a residual gate, so a fresh layer starts as a plain RMS norm with a closed residual."""

    def __init__(self, dim: int, cond_dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.dense = nn.Linear(cond_dim, 3 * dim)
        nn.init.zeros_(self.dense.weight)
        nn.init.zeros_(self.dense.bias)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        scale, shift, gate = self.dense(cond).float()[:, None, :].chunk(3, dim=-1)
        return (normed * (1 + scale) + shift).to(x.dtype), gate.to(x.dtype)


def gemma_config(spec: GemmaSpec, vocab_size: int, pad_token_id: int | None = None) -> GemmaConfig:
    """A transformers ``GemmaConfig`` for one tower (gelu-tanh MLP, RoPE theta 10000, eps 1e-6)."""
    return GemmaConfig(
        vocab_size=vocab_size,
        hidden_size=spec.width,
        intermediate_size=spec.mlp_dim,
        num_hidden_layers=spec.depth,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.head_dim,
        hidden_act="gelu_pytorch_tanh",
        pad_token_id=pad_token_id,
        bos_token_id=None,
        eos_token_id=None,
        max_position_embeddings=8192,
    )


def build_expert(spec: GemmaSpec, adarms: bool) -> GemmaModel:
    """A ``GemmaModel`` without token embeddings; with ``adarms`` its norms become ``AdaRMSNorm``."""
    expert = GemmaModel(gemma_config(spec, vocab_size=1))
    expert.embed_tokens = None
    if adarms:
        for layer in expert.layers:
            layer.input_layernorm = AdaRMSNorm(spec.width, spec.width)
            layer.post_attention_layernorm = AdaRMSNorm(spec.width, spec.width)
        expert.norm = AdaRMSNorm(spec.width, spec.width)
    return expert


@dataclass
class PrefixCache:
    """Per-layer keys/values of the prefix (post-RoPE), its padding mask and its final hidden states."""

    keys: list[torch.Tensor]  # each [N, kv_heads, P, head_dim]
    values: list[torch.Tensor]
    pad_mask: torch.Tensor  # [N, P] bool
    hidden: torch.Tensor  # [N, P, W] after the final norm

    def repeat(self, times: int) -> PrefixCache:
        """The cache tiled ``times`` along the batch (sample-major: row n*times + j)."""
        rep = lambda x: x.repeat_interleave(times, dim=0)  # noqa: E731
        return PrefixCache(
            [rep(k) for k in self.keys], [rep(v) for v in self.values], rep(self.pad_mask), rep(self.hidden)
        )


def _norm(
    module: nn.Module, x: torch.Tensor, cond: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    if isinstance(module, AdaRMSNorm):
        return module(x, cond)
    return module(x), None


def _residual(x: torch.Tensor, y: torch.Tensor, gate: torch.Tensor | None) -> torch.Tensor:
    return x + y if gate is None else x + y * gate


def _project_qkv(
    layer: nn.Module, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, head_dim: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n, s, _ = x.shape
    attn = layer.self_attn
    q = attn.q_proj(x).view(n, s, -1, head_dim).transpose(1, 2)
    k = attn.k_proj(x).view(n, s, -1, head_dim).transpose(1, 2)
    v = attn.v_proj(x).view(n, s, -1, head_dim).transpose(1, 2)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    return q, k, v


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, scale=q.shape[-1] ** -0.5, enable_gqa=q.shape[1] != k.shape[1]
    )
    n, _, s, _ = out.shape
    return out.transpose(1, 2).reshape(n, s, -1)


def _maybe_checkpoint(enabled: bool, fn: Callable, *args: torch.Tensor | None) -> tuple:
    if enabled and torch.is_grad_enabled():
        return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)
    return fn(*args)


def run_prefix(
    lm: GemmaModel, embeds: torch.Tensor, pad_mask: torch.Tensor, checkpoint: bool = False
) -> PrefixCache:
    """Bidirectional pass of the PaliGemma language model over ``embeds [N, P, W]``."""
    head_dim = lm.config.head_dim
    positions = (pad_mask.long().cumsum(-1) - 1).clamp(min=0)
    cos, sin = lm.rotary_emb(embeds, positions)
    mask = pad_mask[:, None, None, :]  # every query sees every valid prefix token
    keys, values = [], []
    h = embeds
    for layer in lm.layers:

        def block(h: torch.Tensor, layer: nn.Module = layer) -> tuple[torch.Tensor, ...]:
            q, k, v = _project_qkv(layer, layer.input_layernorm(h), cos, sin, head_dim)
            h = h + layer.self_attn.o_proj(_attend(q, k, v, mask))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
            return h, k, v

        h, k, v = _maybe_checkpoint(checkpoint, block, h)
        keys.append(k)
        values.append(v)
    return PrefixCache(keys, values, pad_mask, lm.norm(h))


def suffix_attention_mask(prefix_pad: torch.Tensor, block_starts: list[int]) -> torch.Tensor:
    """[N, 1, S, P+S] bool: suffix token i sees all valid prefix tokens and suffix tokens whose block
    starts at or before its own (``block_starts[j] = 1`` opens a new block at token j)."""
    n, p = prefix_pad.shape
    s = len(block_starts)
    blocks = torch.tensor(block_starts, device=prefix_pad.device).cumsum(0)
    within = blocks[None, :] <= blocks[:, None]  # [S, S]
    return torch.cat([prefix_pad[:, None, :].expand(n, s, p), within[None].expand(n, s, s)], dim=-1)[:, None]


def run_expert(
    expert: GemmaModel,
    embeds: torch.Tensor,
    prefix: PrefixCache,
    block_starts: list[int],
    cond: torch.Tensor | None = None,
    checkpoint: bool = False,
) -> torch.Tensor:
    """Action-expert pass over the suffix ``embeds [N, S, W_e]`` reading the prefix cache; returns
    the final-normed hidden states [N, S, W_e]. ``cond`` [N, W_e] drives the adaRMS norms (pi0.5)."""
    head_dim = expert.config.head_dim
    n, s, _ = embeds.shape
    start = prefix.pad_mask.long().sum(-1, keepdim=True)
    positions = start + torch.arange(s, device=embeds.device)[None]
    cos, sin = expert.rotary_emb(embeds, positions)
    mask = suffix_attention_mask(prefix.pad_mask, block_starts)
    h = embeds
    for layer, pk, pv in zip(expert.layers, prefix.keys, prefix.values, strict=True):

        def block(
            h: torch.Tensor,
            cond: torch.Tensor | None,
            pk: torch.Tensor,
            pv: torch.Tensor,
            layer: nn.Module = layer,
        ) -> torch.Tensor:
            x, gate = _norm(layer.input_layernorm, h, cond)
            q, k, v = _project_qkv(layer, x, cos, sin, head_dim)
            k = torch.cat([pk.to(k.dtype), k], dim=2)
            v = torch.cat([pv.to(v.dtype), v], dim=2)
            h = _residual(h, layer.self_attn.o_proj(_attend(q, k, v, mask)), gate)
            x, gate = _norm(layer.post_attention_layernorm, h, cond)
            return _residual(h, layer.mlp(x), gate)

        h = _maybe_checkpoint(checkpoint, block, h, cond, pk, pv)
    out, _ = _norm(expert.norm, h, cond)
    return out
