"""Action-conditioned latent video dynamics model built from diffusers parts.

``vae`` (``AutoencoderKLLTXVideo``) maps each frame of each view to a latent grid (frames and views
folded into the batch, one frame at a time, so time is not compressed). Latents are normalised per
channel and packed ``latent_patch`` x ``latent_patch`` into tokens. The tokens of every view and frame
of a sample form one sequence laid out as a [frames, height, views x width] grid (views side by side,
so self-attention is cross-view attention, plus a learned view embedding), which ``transformer``
(``LTXVideoTransformer3DModel``) denoises with flow matching: history tokens get timestep 0 and stay
clean, future tokens are noisy. The transformer cross-attends to one token per (sub-sampled) action,
a state token and a prompt token. A small head predicts the state after the chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from diffusers import AutoencoderKLLTXVideo, FlowMatchEulerDiscreteScheduler, LTXVideoTransformer3DModel
from torch import nn

from toolkits.base.model_dir import ModelDirMixin
from world_models.dynamics_config import DynamicsModelConfig


class DynamicsModel(ModelDirMixin, nn.Module):
    """``imagine(history, state, actions, prompt)`` -> the frames (and state) after the action chunk."""

    config_class = DynamicsModelConfig
    model_kind = "dynamics model"

    def __init__(self, cfg: DynamicsModelConfig):
        super().__init__()
        self.cfg = cfg
        self.vae = AutoencoderKLLTXVideo(**cfg.vae)
        ch = cfg.latent_channels * cfg.latent_patch**2
        self.transformer = LTXVideoTransformer3DModel(
            in_channels=ch, out_channels=ch, caption_channels=cfg.context_dim, **cfg.transformer
        )
        width = cfg.context_dim
        steps = cfg.action_chunk // cfg.wm_action_interval
        self.action_encoder = nn.Sequential(
            nn.Linear(cfg.action_dim, width), nn.SiLU(), nn.Linear(width, width)
        )
        self.action_position = nn.Parameter(torch.randn(steps, width) * 0.02)
        self.view_embedding = nn.Parameter(torch.zeros(cfg.num_views, ch))
        if cfg.state_dim > 0:
            self.state_encoder = nn.Sequential(
                nn.Linear(cfg.state_dim, width), nn.SiLU(), nn.Linear(width, width)
            )
        if cfg.prompts:
            self.prompt_embedding = nn.Embedding(len(cfg.prompts), width)
        if cfg.predict_state:
            in_dim = cfg.state_dim + steps * cfg.action_dim + cfg.latent_channels * cfg.num_views
            self.state_head = nn.Sequential(nn.Linear(in_dim, 256), nn.SiLU(), nn.Linear(256, 256), nn.SiLU(),
                                            nn.Linear(256, cfg.state_dim))  # fmt: skip
        self.register_buffer("latent_mean", torch.zeros(cfg.latent_channels))
        self.register_buffer("latent_std", torch.ones(cfg.latent_channels))
        self.register_buffer("delta_std", torch.ones(cfg.latent_channels))
        self._prompt_index = {p: i for i, p in enumerate(cfg.prompts)}
        self.to(getattr(torch, cfg.dtype))

    @property
    def device(self) -> torch.device:
        return self.view_embedding.device

    @property
    def dtype(self) -> torch.dtype:
        return self.view_embedding.dtype

    # ------------------------------------------------------------------ VAE
    def _pixels(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 [N, T, V, H, W, 3] -> [N*T*V, 3, 1, S, S] in [-1, 1]."""
        n, t, v, h, w, _ = images.shape
        x = images.to(self.device).reshape(n * t * v, h, w, 3).permute(0, 3, 1, 2).to(self.dtype) / 127.5 - 1
        size = self.cfg.image_size
        if (h, w) != (size, size):
            x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True)
        return x[:, :, None]

    def encode(self, images: torch.Tensor, sample: bool = False) -> torch.Tensor:
        """uint8 [N, T, V, H, W, 3] -> normalised latents [N, T, V, C, h, w] (the mean unless ``sample``)."""
        n, t, v = images.shape[:3]
        dist = self.vae.encode(self._pixels(images)).latent_dist
        z = dist.sample() if sample else dist.mode()
        z = (z[:, :, 0] - self.latent_mean[:, None, None]) / self.latent_std[:, None, None]
        return z.reshape(n, t, v, *z.shape[1:])

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Normalised latents [N, T, V, C, h, w] -> uint8 frames [N, T, V, S, S, 3]."""
        n, t, v, c, h, w = latents.shape
        z = (
            latents.reshape(n * t * v, c, h, w) * self.latent_std[:, None, None]
            + self.latent_mean[:, None, None]
        )
        x = self.vae.decode(z[:, :, None].to(self.dtype)).sample[:, :, 0]
        x = ((x.float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
        return x.permute(0, 2, 3, 1).reshape(n, t, v, *x.shape[2:], 3)

    def vae_loss(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        """Reconstruction (MSE on [-1, 1] pixels) + ``kl_weight`` x KL, for training the VAE first."""
        x = self._pixels(images)
        dist = self.vae.encode(x).latent_dist
        recon = self.vae.decode(dist.sample()).sample
        mse = (recon.float() - x.float()).pow(2).mean()
        kl = dist.kl().float().mean() / x[0].numel()
        return {"loss": mse + self.cfg.kl_weight * kl, "recon_mse": mse.detach(), "kl": kl.detach()}

    @torch.no_grad()
    def fit_latent_stats(self, frames: torch.Tensor, batch: int = 64) -> None:
        """Per-channel mean/std of the latents of ``frames`` uint8 [M, V, H, W, 3] (after VAE training)."""
        self.latent_mean.zero_()
        self.latent_std.fill_(1.0)
        zs = [self.encode(part[:, None]).flatten(0, 2) for part in frames.split(batch)]
        z = torch.cat(zs).float()  # [M*V, C, h, w]
        self.latent_mean.copy_(z.mean(dim=(0, 2, 3)))
        self.latent_std.copy_(z.std(dim=(0, 2, 3)).clamp(min=1e-3))

    @torch.no_grad()
    def fit_delta_stats(
        self, history_images: torch.Tensor, future_images: torch.Tensor, batch: int = 64
    ) -> None:
        """Per-channel std of future latents minus the last history latent, for ``predict_delta``."""
        self.delta_std.fill_(1.0)
        deltas = [
            (self.encode(f) - self.encode(h[:, -1:])).movedim(3, 0).flatten(1)
            for h, f in zip(history_images.split(batch), future_images.split(batch))
        ]  # each [C, ...]
        self.delta_std.copy_(torch.cat(deltas, 1).float().std(1).clamp(min=1e-3))

    def _to_target(self, future: torch.Tensor, hist: torch.Tensor) -> torch.Tensor:
        """Future latents -> what is denoised (themselves, or their scaled change since the last history frame)."""
        if not self.cfg.predict_delta:
            return future
        return (future - hist[:, -1:]) / self.delta_std[:, None, None]

    def _from_target(self, x: torch.Tensor, hist: torch.Tensor) -> torch.Tensor:
        if not self.cfg.predict_delta:
            return x
        return hist[:, -1:] + x * self.delta_std[:, None, None]

    # ------------------------------------------------------------------ tokens
    def _pack(self, z: torch.Tensor) -> tuple[torch.Tensor, tuple[int, int, int]]:
        """[N, T, V, C, h, w] -> tokens [N, T*h'*(V*w'), C*p*p] on a [T, h', V*w'] grid (+ view embedding)."""
        n, t, v, c, h, w = z.shape
        p = self.cfg.latent_patch
        x = z.reshape(n, t, v, c, h // p, p, w // p, p).permute(0, 1, 4, 2, 6, 3, 5, 7)
        x = x.reshape(n, t, h // p, v, w // p, c * p * p) + self.view_embedding[None, None, None, :, None, :]
        return x.reshape(n, t * (h // p) * v * (w // p), c * p * p), (t, h // p, v * (w // p))

    def _unpack(self, tokens: torch.Tensor, t: int, v: int, h: int, w: int) -> torch.Tensor:
        """Inverse of ``_pack`` (without the view embedding): -> [N, T, V, C, h, w]."""
        n = tokens.shape[0]
        p = self.cfg.latent_patch
        c = tokens.shape[-1] // (p * p)
        x = tokens.reshape(n, t, h // p, v, w // p, c, p, p).permute(0, 1, 3, 5, 2, 6, 4, 7)
        return x.reshape(n, t, v, c, h, w)

    def context(
        self, state: torch.Tensor | None, actions: torch.Tensor, prompt: Sequence[str] | None
    ) -> torch.Tensor:
        """Cross-attention tokens [N, L, context_dim]: sub-sampled actions (+ state, + prompt)."""
        k = self.cfg.wm_action_interval
        acts = actions.to(self.device, self.dtype)[:, k - 1 :: k]
        tokens = [self.action_encoder(acts) + self.action_position]
        if self.cfg.state_dim > 0:
            if state is None:
                raise ValueError("this dynamics model is state-conditioned: pass the state")
            tokens.append(self.state_encoder(state.to(self.device, self.dtype))[:, None])
        if self.cfg.prompts:
            if prompt is None:
                raise ValueError("this dynamics model is prompt-conditioned: pass one prompt per env")
            unknown = sorted({p for p in prompt if p not in self._prompt_index})
            if unknown:
                raise ValueError(f"dynamics model: unknown prompts {unknown}; it knows {self.cfg.prompts}")
            ids = torch.tensor([self._prompt_index[p] for p in prompt], device=self.device)
            tokens.append(self.prompt_embedding(ids)[:, None])
        return torch.cat(tokens, dim=1)

    def velocity(
        self, history: torch.Tensor, future: torch.Tensor, sigma: torch.Tensor, ctx: torch.Tensor
    ) -> torch.Tensor:
        """Flow velocity for the future latents [N, T_f, V, C, h, w] at noise levels ``sigma`` [N]."""
        n, t_h, v, c, h, w = history.shape
        t_f = future.shape[1]
        tokens, grid = self._pack(torch.cat([history, future], dim=1).to(self.dtype))
        per_frame = tokens.shape[1] // (t_h + t_f)
        timestep = torch.cat(
            [
                torch.zeros(n, t_h * per_frame, device=self.device),
                (sigma[:, None] * 1000).expand(n, t_f * per_frame),
            ],
            1,
        )
        mask = torch.ones(ctx.shape[:2], device=self.device)
        out = self.transformer(
            hidden_states=tokens, encoder_hidden_states=ctx, timestep=timestep, encoder_attention_mask=mask,
            num_frames=grid[0], height=grid[1], width=grid[2],
        ).sample  # fmt: skip
        return self._unpack(out[:, t_h * per_frame :].float(), t_f, v, h, w)

    def _next_state(self, state: torch.Tensor, actions: torch.Tensor, history: torch.Tensor) -> torch.Tensor:
        k = self.cfg.wm_action_interval
        acts = actions.to(self.device, self.dtype)[:, k - 1 :: k].flatten(1)
        pooled = history[:, -1].mean(dim=(-1, -2)).flatten(1).to(self.dtype)  # [N, V*C]
        s = state.to(self.device, self.dtype)
        return s + self.state_head(torch.cat([s, acts, pooled], dim=1)).float()

    # ------------------------------------------------------------------ training and imagination
    def training_loss(
        self,
        history_images: torch.Tensor,
        future_images: torch.Tensor,
        actions: torch.Tensor,
        state: torch.Tensor | None = None,
        next_state: torch.Tensor | None = None,
        prompt: Sequence[str] | None = None,
        generator: torch.Generator | None = None,
    ) -> dict[str, torch.Tensor]:
        """Flow matching on the future latents (history clean), plus the next-state error when predicted."""
        with torch.no_grad():
            hist = self.encode(history_images)
            x0 = self._to_target(self.encode(future_images), hist)
        n = x0.shape[0]
        noise = torch.randn(x0.shape, generator=generator).to(self.device)
        sigma = torch.rand(n, generator=generator).to(self.device)
        s = sigma[:, None, None, None, None, None]
        x_t = (1 - s) * x0 + s * noise
        v = self.velocity(hist, x_t, sigma, self.context(state, actions, prompt))
        flow = (v - (noise - x0)).pow(2).mean()
        out = {"flow": flow.detach()}
        loss = flow
        if self.cfg.predict_state and next_state is not None:
            state_err = (self._next_state(state, actions, hist) - next_state.to(self.device)).pow(2).mean()
            loss = loss + state_err
            out["state"] = state_err.detach()
        out["loss"] = loss
        return out

    def noise_shape(self) -> tuple[int, int, int, int, int]:
        """Shape [T_f, V, C, h, w] of one sample's starting noise."""
        cfg = self.cfg
        if not hasattr(self, "_latent_hw"):  # the VAE's spatial compression, found once with a probe
            with torch.no_grad():
                probe = torch.zeros(
                    1, 3, 1, cfg.image_size, cfg.image_size, dtype=self.dtype, device=self.device
                )
                self._latent_hw = int(self.vae.encode(probe).latent_dist.mode().shape[-1])
        size = self._latent_hw
        return (cfg.future_frames, cfg.num_views, cfg.latent_channels, size, size)

    @torch.no_grad()
    def imagine(
        self,
        history_images: torch.Tensor,
        state: torch.Tensor | None,
        actions: torch.Tensor,
        prompt: Sequence[str] | None = None,
        generator: torch.Generator | None = None,
        num_inference_steps: int | None = None,
        noise: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor | None]:
        """history uint8 [N, T_h, V, H, W, 3], actions [N, C, A] -> ``images`` uint8 [N, T_f, V, S, S, 3]
        and ``state`` [N, S] (None unless ``predict_state``). All envs share each denoising forward.
        The starting noise is ``noise`` (broadcast to [N, T_f, V, C, h, w]) when given, else drawn from
        ``generator``: the same seed, or the same noise, gives the same imagination."""
        cfg = self.cfg
        hist = self.encode(history_images)
        n, _, v, c, h, w = hist.shape
        ctx = self.context(state, actions, prompt)
        shape = (n, cfg.future_frames, v, c, h, w)
        if noise is None:
            noise = torch.randn(shape, generator=generator)
        x = noise.to(self.device, torch.float32).expand(shape).clone()
        scheduler = FlowMatchEulerDiscreteScheduler()
        scheduler.set_timesteps(num_inference_steps or cfg.num_inference_steps, device=self.device)
        for t in scheduler.timesteps:
            sigma = torch.full((n,), float(t) / scheduler.config.num_train_timesteps, device=self.device)
            vel = self.velocity(hist, x, sigma, ctx)
            x = scheduler.step(vel, t, x).prev_sample
        images = self.decode(self._from_target(x, hist))
        if cfg.decode_residual:
            last = self._pixels(history_images[:, -1:])[:, :, 0]  # [N*V, 3, S, S] in [-1, 1]
            last = ((last.float() + 1) * 127.5).permute(0, 2, 3, 1).reshape(n, 1, v, *last.shape[2:], 3)
            recon = self.decode(hist[:, -1:]).float()
            images = (last + images.float() - recon).round().clamp(0, 255).to(torch.uint8)
        next_state = self._next_state(state, actions, hist) if cfg.predict_state else None
        return {"images": images, "state": next_state}

    # ------------------------------------------------------------------ weights
    @classmethod
    def from_diffusers_dirs(
        cls, cfg: DynamicsModelConfig, vae_dir: str | Path, transformer_dir: str | Path
    ) -> DynamicsModel:
        """A model whose VAE and denoiser come from local diffusers-format directories (e.g. LTX-Video's)."""
        model = cls(cfg)
        model.vae = AutoencoderKLLTXVideo.from_pretrained(str(vae_dir), local_files_only=True)
        model.transformer = LTXVideoTransformer3DModel.from_pretrained(
            str(transformer_dir), local_files_only=True
        )
        return model.to(getattr(torch, cfg.dtype))
