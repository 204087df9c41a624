"""A directory of per-episode VAE latents, so that repeated trainings on growing data (co-evolution's refits)
encode only the episodes they have not seen: encoding every frame is most of a renderer refit's time.

An entry is keyed by what the latents depend on (the VAE's weights, the latent normalisers, the image size
and dtype: ``encoder_fingerprint``) and the episode file's bytes, so a refitted VAE or a rewritten episode
never reads a stale entry, while a refitted denoiser keeps them; hard-linked copies of an episode (``toolkits.episodes.merge``)
share one entry. Entries are written atomically (a stopped run leaves no half file).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

import torch
from safetensors.torch import load_file, save_file


def tensors_fingerprint(tensors: dict[str, torch.Tensor], extra: str = "") -> str:
    """A hex digest of named tensors (names, shapes, dtypes and values) and ``extra``."""
    digest = hashlib.sha1(extra.encode())
    for name, tensor in sorted(tensors.items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()[:20]


def encoder_fingerprint(dynamics) -> str:
    """The key of what a dynamics model's normalised latents depend on: its VAE's weights, the latent mean and
    std, the image size and the dtype. The denoiser is left out, so refitting it keeps the entries."""
    tensors = {f"vae.{name}": t for name, t in dynamics.vae.state_dict().items()}
    tensors |= {"latent_mean": dynamics.latent_mean, "latent_std": dynamics.latent_std}
    return tensors_fingerprint(tensors, f"image_size={dynamics.cfg.image_size}:dtype={dynamics.dtype}")


def check_cache_dir(key: str, path: str | None) -> None:
    """A ``ConfigError`` naming ``key`` when ``path`` is a file: the cache is a folder (made when missing)."""
    from toolkits.base.errors import config_error

    if path is not None and os.path.exists(path) and not os.path.isdir(path):
        raise config_error(key, path, "a folder for the renderer's latents (this is a file)")


def file_fingerprint(path: str) -> str:
    """A hex digest of the file's bytes."""
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()[:20]


def cached_latents(
    cache_dir: str, model_key: str, episode_file: str, encode: Callable[[], torch.Tensor]
) -> torch.Tensor:
    """The latents of ``episode_file`` under ``model_key`` from ``cache_dir``, or ``encode()``'s, stored there."""
    folder = os.path.join(cache_dir, model_key)
    path = os.path.join(folder, f"{file_fingerprint(episode_file)}.safetensors")
    if os.path.isfile(path):
        return load_file(path)["latents"]
    latents = encode()
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    save_file({"latents": latents.contiguous()}, tmp)
    os.replace(tmp, path)
    return latents
