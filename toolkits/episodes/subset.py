"""A small copy of an episode dataset: a few successful and failed episodes per task, with its labels.

    python -m toolkits.episodes.subset --data data/mt10_labelled --out assets/offline --per-task 3 \\
        --failed-per-task 1 [--seed 0]

Used to ship a few of an imitation policy's own (labelled) training episodes beside it, e.g. as the
offline anchor of world-model RL (``algorithm.offline_data_path``), without shipping the whole dataset.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil

import numpy as np

from toolkits.base.atomic import directory_written_atomically
from toolkits.episodes.format import INDEX


def write_subset(src: str, dst: str, per_task: int, failed_per_task: int = 0, seed: int = 0) -> int:
    """Copy ``per_task`` successful and ``failed_per_task`` failed episodes of every task (drawn with
    ``seed``; fewer where the dataset has fewer) from ``src`` to the new directory ``dst``, keeping the
    dataset info (cameras, labels); returns the number of episodes copied."""
    if os.path.exists(dst):
        raise FileExistsError(f"--out {dst} exists; choose a new directory")
    with open(os.path.join(src, INDEX)) as f:
        index = json.load(f)
    rng = np.random.default_rng(seed)
    groups: dict[tuple[str, bool], list[int]] = {}
    for i, entry in enumerate(index["episodes"]):
        groups.setdefault((entry["task"], bool(entry["success_once"])), []).append(i)
    chosen: list[int] = []
    for (_, ok), members in sorted(groups.items()):
        k = per_task if ok else failed_per_task
        chosen += rng.permutation(members)[:k].tolist()
    entries = [dict(index["episodes"][i]) for i in sorted(chosen)]
    info = {**index.get("info", {}), "subset_of": src, "subset_seed": seed}
    return write_dataset(src, dst, {**index, "info": info, "episodes": entries})


def link_or_copy(src: str, dst: str) -> None:
    """A hard link of ``src`` at ``dst`` (no second copy of the frames), else a copy (another file system)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def write_dataset(src: str, dst: str, index: dict, link: bool = False) -> int:
    """The new dataset ``dst`` of ``index``, whose episodes are files of ``src``: each copied (``link``: hard-linked
    where it can be), the whole built beside ``dst`` and renamed into place; returns the number of episodes."""
    with directory_written_atomically(dst) as tmp:
        os.makedirs(os.path.join(tmp, "episodes"))
        for entry in index["episodes"]:
            (link_or_copy if link else shutil.copy2)(
                os.path.join(src, entry["file"]), os.path.join(tmp, entry["file"])
            )
        with open(os.path.join(tmp, INDEX), "w") as f:
            json.dump(index, f, indent=1)
    return len(index["episodes"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="episode dataset to copy from")
    p.add_argument("--out", required=True, help="new directory")
    p.add_argument("--per-task", type=int, required=True, help="successful episodes per task")
    p.add_argument("--failed-per-task", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    n = write_subset(args.data, args.out, args.per_task, args.failed_per_task, args.seed)
    print(f"wrote {n} episodes of {args.data} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
