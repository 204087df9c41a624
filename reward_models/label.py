"""Write per-frame values and per-step advantages from a reward model into a copy of an episode dataset.

    python -m reward_models.label --model-dir logs/rm/model --data data/mt10 --out data/mt10_labelled \\
        --horizon 10 --advantage-scale 1.0

Each episode file of the copy gains ``values`` float32 [T+1] (the model's score of every frame) and
``advantages`` float32 [T] (``mean over the next H frames of (V(t+k) - V(t))`` times
``advantage_scale``), which advantage-conditioned imitation reads. The copy is written under a
temporary name and renamed when complete; the source dataset is never modified.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import h5py
import numpy as np
import torch

from toolkits.base.cli import tool_prog


@torch.no_grad()
def label_dataset(
    model_dir: str,
    data: str,
    out: str,
    horizon: int = 10,
    advantage_scale: float = 1.0,
    batch_frames: int = 256,
) -> dict[str, float]:
    """Copy ``data`` to ``out`` with values and advantages added; returns summary statistics."""
    from reward_models.modeling import FrameScorer
    from reward_models.targets import advantages_from_values
    from toolkits.episodes import EpisodeDataset

    if os.path.exists(out):
        raise FileExistsError(f"--out {out} exists; choose a new directory (the source is never overwritten)")
    model = FrameScorer.from_pretrained(model_dir)
    source = EpisodeDataset(data)
    tmp = out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(data, tmp)
    all_adv = []
    for entry in source.entries:
        path = os.path.join(tmp, entry["file"])
        with h5py.File(path, "a") as f:
            images = torch.from_numpy(f["images"][()])
            values = torch.cat(
                [model.score(part[None], [entry["prompt"]])[0] for part in images.split(batch_frames)]
            ).numpy()
            adv = advantages_from_values(values, horizon, advantage_scale)
            for key, arr in (("values", values), ("advantages", adv)):
                if key in f:
                    del f[key]
                f.create_dataset(key, data=arr.astype(np.float32))
        all_adv.append(adv)
    index_path = os.path.join(tmp, "index.json")
    with open(index_path) as fh:
        index = json.load(fh)
    index.setdefault("info", {})["labels"] = {
        "model_dir": os.path.abspath(model_dir), "horizon": horizon, "advantage_scale": advantage_scale,
    }  # fmt: skip
    with open(index_path, "w") as fh:
        json.dump(index, fh, indent=1)
    os.replace(tmp, out)
    adv = np.concatenate(all_adv) if all_adv else np.zeros(0)
    return {"episodes": len(source), "advantage_mean": float(adv.mean()), "advantage_std": float(adv.std())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=tool_prog("reward_models.label"), description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--horizon", type=int, default=10, help="H: frames ahead averaged in the advantage")
    p.add_argument("--advantage-scale", type=float, default=1.0)
    args = p.parse_args(argv)
    if args.horizon < 1:
        print(f"error: --horizon={args.horizon}: must be >= 1", file=sys.stderr)
        return 2
    for flag, path, needed in (
        ("--model-dir", args.model_dir, "config.json"),
        ("--data", args.data, "index.json"),
    ):
        if not os.path.isfile(os.path.join(path, needed)):
            print(f"error: {flag}={path}: no {needed} there", file=sys.stderr)
            return 2
    stats = label_dataset(args.model_dir, args.data, args.out, args.horizon, args.advantage_scale)
    print(f"labelled {stats['episodes']} episodes into {args.out}: advantage mean {stats['advantage_mean']:.4f}, "
          f"std {stats['advantage_std']:.4f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
