"""One episode dataset from several: e.g. expert episodes and a policy's own rollouts for a world model.

    python -m toolkits.episodes.merge --data data/il120 data/policy120 --out data/il120_policy120

The datasets must record the same cameras at the same image size. Episodes keep their fields (task,
prompt, policy, success); the index's ``task_id`` is renumbered over the union of the tasks in order of
appearance (unchanged for the first dataset; the HDF5 attributes keep the source's), and the new
``index.json`` says where each episode came from (``merged_from``). Files are hard-linked where the
file system allows (no extra disk), copied otherwise.
"""

from __future__ import annotations

import argparse
import json
import os

from toolkits.base.atomic import directory_written_atomically
from toolkits.episodes.format import INDEX
from toolkits.episodes.subset import link_or_copy


def merge_datasets(sources: list[str], dst: str) -> int:
    """Write the episodes of every dataset in ``sources`` into the new directory ``dst`` (atomically:
    built beside it, then renamed); returns the number of episodes."""
    if os.path.exists(dst):
        raise FileExistsError(f"--out {dst} exists; choose a new directory")
    indexes = []
    for src in sources:
        path = os.path.join(src, INDEX)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--data {src}: no {INDEX}; not an episode dataset")
        with open(path) as f:
            indexes.append(json.load(f))
    views = {(tuple(e["cameras"]), int(e["image_size"])) for index in indexes for e in index["episodes"]}
    if len(views) > 1:
        raise ValueError(f"--data: the datasets record different cameras/image sizes {sorted(views)}; "
                         "a dataset holds one")  # fmt: skip
    tasks = list(dict.fromkeys(e["task"] for index in indexes for e in index["episodes"]))
    entries = []
    with directory_written_atomically(dst) as tmp:
        os.makedirs(os.path.join(tmp, "episodes"))
        for src, index in zip(sources, indexes, strict=True):
            for entry in index["episodes"]:
                file = os.path.join("episodes", f"episode_{len(entries):06d}.h5")
                link_or_copy(os.path.join(src, entry["file"]), os.path.join(tmp, file))
                entries.append(
                    {**entry, "file": file, "task_id": tasks.index(entry["task"]), "merged_from": src}
                )
        info = {**indexes[0].get("info", {}), "tasks": tasks, "merged_from": sources}
        with open(os.path.join(tmp, INDEX), "w") as f:
            json.dump({**indexes[0], "info": info, "episodes": entries, "summary": {}}, f, indent=1)
    return len(entries)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", nargs="+", required=True, help="episode datasets to merge")
    p.add_argument("--out", required=True, help="new directory")
    args = p.parse_args(argv)
    n = merge_datasets(args.data, args.out)
    print(f"wrote {n} episodes of {', '.join(args.data)} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
