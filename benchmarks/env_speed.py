"""Simulator speed as one env worker sees it: env steps/s of ``chunk_step`` with random actions, frames
rendered at chunk ends (what the rollout reads), at 1, 2 and 4 envs in one process.

    .venv/bin/python benchmarks/env_speed.py [--envs 1 2 4] [--chunks 10] [--sims metaworld libero maniskill]
    .venv/bin/python benchmarks/env_speed.py --sims maniskill --maniskill-backend gpu --envs 64 256   # CUDA

Meta-World runs ``configs/env/metaworld_3tasks.yaml``; LIBERO runs ``configs/env/libero_object_3tasks.yaml``
(``make install-libero``); ManiSkill3 runs ``configs/env/maniskill_3tasks.yaml`` (``make install-maniskill``)
with its CPU simulation, or its GPU one (each task's envs one batch). All at their configs' image size and cameras. Creation and the first reset
are timed apart from stepping; episodes that end restart (auto reset), as in training.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import yaml

from policy_and_value.config.schema import env_config
from policy_and_value.envs.registry import make_env

REPO = Path(__file__).resolve().parents[1]
CONFIGS = {"metaworld": "metaworld_3tasks", "libero": "libero_object_3tasks", "maniskill": "maniskill_3tasks"}


def measure(sim: str, n: int, chunks: int, maniskill_backend: str = "cpu") -> dict[str, float]:
    cfg = env_config(**yaml.safe_load((REPO / "configs" / "env" / f"{CONFIGS[sim]}.yaml").read_text()))
    cfg = cfg.model_copy(
        update={"auto_reset": True, "video_cfg": cfg.video_cfg.model_copy(update={"save_video": False})}
    )
    if sim == "maniskill":
        cfg = cfg.model_copy(update={"sim_backend": maniskill_backend})
    t0 = time.perf_counter()
    env = make_env(cfg, n, seed=0)
    created = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        env.reset()
        reset = time.perf_counter() - t0
        g = torch.Generator().manual_seed(0)
        t0 = time.perf_counter()
        for _ in range(chunks):
            env.chunk_step(torch.rand(n, env.chunk, env.action_dim, generator=g) * 2 - 1)
        steps = n * chunks * env.chunk / (time.perf_counter() - t0)
    finally:
        env.close()
    return {
        "create": created,
        "reset": reset,
        "steps_per_s": steps,
        "image": cfg.image_size,
        "views": len(cfg.cameras),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--chunks", type=int, default=10)
    p.add_argument("--sims", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--maniskill-backend", choices=["cpu", "gpu"], default="cpu", help="gpu needs CUDA")
    args = p.parse_args()
    print(
        "| simulator | envs per worker | env steps/s | per env | creation | first reset |\n|---|---|---|---|---|---|"
    )
    for sim in args.sims:
        for n in args.envs:
            m = measure(sim, n, args.chunks, args.maniskill_backend)
            name = f"{sim} {args.maniskill_backend}" if sim == "maniskill" else sim
            print(f"| {name} ({m['views']} views, {m['image']} px) | {n} | {m['steps_per_s']:.1f} | "
                  f"{m['steps_per_s'] / n:.1f} | {m['create']:.1f} s | {m['reset']:.2f} s |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
