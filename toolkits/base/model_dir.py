"""Model directories (``config.json`` + ``model.safetensors``), written and read the same way by the
reward models, the dynamics model and the state model (``ModelDirMixin``): strict loads that list any key
mismatch, and ``replace_dir_atomically`` for writes a stop midway must not leave half done."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from safetensors.torch import load_file, save_file
from torch import nn

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


def write_config_json(path: str | Path, cfg: Any, model_type: str) -> None:
    """Write dataclass ``cfg`` as ``config.json`` with its ``model_type`` tag."""
    Path(path).write_text(json.dumps({"model_type": model_type, **dataclasses.asdict(cfg)}, indent=2))


def read_config_json(cls: type, path: str | Path, kind: str) -> Any:
    """Dataclass ``cls`` from a ``config.json`` written by ``write_config_json``; unknown keys are an error
    naming them (a ``kind`` config from another version or another model)."""
    data = json.loads(Path(path).read_text())
    data.pop("model_type", None)
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise ValueError(f"{path}: unknown {kind} config keys {unknown}")
    return cls(**data)


def write_model_dir(directory: str | Path, cfg: Any, model: nn.Module) -> Path:
    """Write ``cfg.save(config.json)`` and the model's state dict as safetensors; returns the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cfg.save(directory / CONFIG_FILE)
    save_file(
        {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
        str(directory / WEIGHTS_FILE),
    )
    return directory


def config_path(directory: str | Path, kind: str) -> Path:
    """``directory/config.json``; a clear error when the directory is not a ``kind`` directory."""
    path = Path(directory) / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{directory}: no {CONFIG_FILE} (not a {kind} directory)")
    return path


def load_weights_strict(model: nn.Module, directory: str | Path) -> None:
    """Load ``directory/model.safetensors`` into ``model``; missing or unexpected keys are an error listing them."""
    path = Path(directory) / WEIGHTS_FILE
    result = model.load_state_dict(load_file(str(path)), strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise KeyError(
            f"{path}: missing keys {result.missing_keys[:20]}, unexpected keys {result.unexpected_keys[:20]}"
        )


class ModelDirMixin:
    """``save_pretrained`` / ``from_pretrained`` for an ``nn.Module`` whose config is ``self.cfg`` (a dataclass
    with ``save`` and ``load``): one way to write and strictly read a model directory for every model here."""

    config_class: ClassVar[type]  # its ``load(path)`` reads config.json
    model_kind: ClassVar[str]  # named in the error when a directory is not this model's

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write ``config.json`` + ``model.safetensors``."""
        return write_model_dir(directory, self.cfg, self)

    @classmethod
    def from_pretrained(cls, directory: str | Path, device: str | torch.device = "cpu") -> Self:
        """Load a directory written by ``save_pretrained``; missing or unexpected keys are an error listing them."""
        model = cls(cls.config_class.load(config_path(directory, cls.model_kind)))
        load_weights_strict(model, directory)
        return model.to(device).eval()


def replace_dir_atomically(final: str | Path, write: Callable[[Path], Any]) -> Path:
    """Have ``write`` fill a sibling temp directory, then swap it in for ``final``: a run stopped midway
    leaves the previous ``final`` (or none), never a half-written one."""
    final = Path(final)
    tmp = final.parent / f".tmp_{final.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    write(tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return final
