"""Turn the actor's torch.distributed.checkpoint (DCP) directory into a plain ``.pt`` state dict.

Usage: ``python toolkits/ckpt_convertor/convert_dcp_to_state_dict.py --dcp_path D --output_path P``
where D is a ``global_step_N`` directory or its ``actor/`` DCP folder, and P is a file path or a
directory (then ``P/model_state_dict.pt`` is written). Only the model's tensors are read (never the
optimiser), without a process group, and the result loads with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import TensorStorageMetadata

from toolkits.base.checkpoint import verify_dcp_dir

MODEL_PREFIX = "model."
DEFAULT_FILENAME = "model_state_dict.pt"


def resolve_dcp_dir(path: str) -> str:
    """Accept a global_step_N directory (with actor/) or the DCP directory itself."""
    for candidate in (path, os.path.join(path, "actor")):
        if os.path.isfile(os.path.join(candidate, ".metadata")):
            return candidate
    raise FileNotFoundError(
        f"--dcp_path={path}: no DCP checkpoint here (expected a .metadata file in it or in {path}/actor)"
    )


def resolve_output_path(path: str) -> str:
    """A directory (existing, or given without a file suffix) gets ``model_state_dict.pt`` inside."""
    if os.path.isdir(path) or path.endswith(os.sep) or not os.path.splitext(path)[1]:
        os.makedirs(path, exist_ok=True)
        return os.path.join(path, DEFAULT_FILENAME)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return path


def load_model_state_dict(dcp_dir: str) -> dict[str, torch.Tensor]:
    """Read the ``model`` tensors of a DCP checkpoint into CPU tensors (its files checked complete first)."""
    verify_dcp_dir(dcp_dir)
    reader = dcp.FileSystemReader(dcp_dir)
    meta = reader.read_metadata().state_dict_metadata
    template: dict[str, torch.Tensor] = {}
    for key, item in meta.items():
        if key.startswith(MODEL_PREFIX) and isinstance(item, TensorStorageMetadata):
            template[key] = torch.empty(item.size, dtype=item.properties.dtype)
    if not template:
        raise ValueError(f"--dcp_path={dcp_dir}: the checkpoint holds no '{MODEL_PREFIX}*' tensors")
    dcp.load(template, storage_reader=reader, no_dist=True)
    return {k[len(MODEL_PREFIX) :]: v for k, v in template.items()}


def convert(dcp_path: str, output_path: str) -> str:
    """Convert and write atomically; returns the file written."""
    state = load_model_state_dict(resolve_dcp_dir(dcp_path))
    out = resolve_output_path(output_path)
    tmp = out + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dcp_path", required=True, help="global_step_N directory or its actor/ DCP folder")
    parser.add_argument("--output_path", required=True, help="output .pt file, or a directory")
    args = parser.parse_args(argv)
    try:
        out = convert(args.dcp_path, args.output_path)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    n = len(torch.load(out, weights_only=True))
    print(f"wrote {n} tensors to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
