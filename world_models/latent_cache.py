"""A directory of per-episode VAE latents, so that repeated trainings on growing data (co-evolution's refits)
encode only the episodes they have not seen: encoding every frame is most of a renderer refit's time.

An entry is keyed by the dynamics model's weights and the episode file's bytes, so a refitted VAE or a
rewritten episode never reads a stale entry; hard-linked copies of an episode (``toolkits.episodes.merge``)
share one entry. Entries are written atomically (a stopped run leaves no half file).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

import torch
from safetensors.torch import load_file, save_file


def model_fingerprint(model: torch.nn.Module) -> str:
    """A hex digest of the model's parameters and buffers (names, shapes, dtypes and values)."""
    digest = hashlib.sha1()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()[:20]


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
