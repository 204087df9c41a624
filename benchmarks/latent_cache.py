"""How long the state model's renderer takes to encode a dataset's frames, without and with ``render.latent_cache``.

    .venv/bin/python benchmarks/latent_cache.py --data logs/coevo_critic16/wm_seed2/coevolution/round_4/data \\
        --cached logs/coevo_critic16/wm_seed2/coevolution/round_3/data

Prints the time of ``encoded_frames`` over every episode of ``--data``: with no cache; with a cache that
holds the episodes of ``--cached`` (what a co-evolution refit finds: the earlier rounds' data), or an empty
one that it fills; with every episode cached. The cache is a temporary directory, removed at the end.
"""

from __future__ import annotations

import argparse
import tempfile
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="episode dataset to encode")
    p.add_argument("--cached", default=None, help="episode dataset whose latents are cached first")
    p.add_argument("--dynamics", default="assets/world_models/tiny_3tasks", help="dynamics model directory")
    p.add_argument("--state-type", default="full", choices=["full", "proprio"])
    args = p.parse_args()

    from toolkits.episodes import EpisodeDataset
    from world_models.dynamics_model import DynamicsModel
    from world_models.train_state_model import encoded_frames

    dynamics = DynamicsModel.from_pretrained(args.dynamics)
    data = EpisodeDataset(args.data)
    ids = list(range(len(data.entries)))
    with tempfile.TemporaryDirectory() as cache:
        if args.cached:
            old = EpisodeDataset(args.cached)
            encoded_frames(dynamics, old, list(range(len(old.entries))), args.state_type, cache_dir=cache)
        partly = f"cache holding {args.cached}" if args.cached else "empty cache (filling it)"
        runs = [("no cache", None), (partly, cache), ("every episode cached", cache)]
        for name, cache_dir in runs:
            start = time.time()
            out = encoded_frames(dynamics, data, ids, args.state_type, cache_dir=cache_dir)
            print(f"{name}: {len(ids)} episodes, {len(out['latents'])} frames, {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
