"""How well does an observation model's value head, read off real frames, predict a recorded episode's outcome?

    python -m experiments.harness.value_auc --model M --vae V --episodes D [D ...] [--frames 0 10 20] [--penalty 0]

``M``: an observation model with a value head (``world_models.train_state_model model.value_head=true``); ``V``: the
dynamics model whose VAE it read; ``D``: recorded episodes (e.g. the policy's own, on layouts never trained on). For
each frame index (an episode shorter than it: its last frame before the end is not used, it is left out), the AUC of
the value (``world_models.learned_reward.observed_values``) for the episode's success, over every episode and per task;
episodes of unknown outcome are skipped. The value of the start frame ranks layouts; later frames rank what the policy
did: the reward ``env.train.learned_reward`` and ``reward_mode: value`` pay is the change of this value.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

import numpy as np
import torch


def frame_values(model, vae, episodes, frames: list[int]) -> dict[str, list]:
    """Per episode of known outcome: its task, success and value at each of ``frames`` (NaN where too short)."""
    from policy_and_value.envs.metaworld_tasks import select_state
    from world_models.learned_reward import observed_values

    rows: dict[str, list] = defaultdict(list)
    for i in range(len(episodes)):
        ep = episodes[i]
        if ep.meta.get("success_once") is None:
            continue
        t = len(ep.images)
        idx = [f for f in frames if f < t]
        obs = {
            "images": torch.from_numpy(ep.images[idx]),
            "state": torch.from_numpy(select_state(ep.state[idx], "proprio")),
            "prompt": [ep.meta["prompt"]] * len(idx),
        }
        values = observed_values(model, vae, obs).numpy() if idx else np.zeros(0)
        by_frame = dict(zip(idx, values, strict=True))
        rows["task"].append(ep.meta.get("task") or ep.meta["prompt"])
        rows["success"].append(bool(ep.meta["success_once"]))
        rows["values"].append([by_frame.get(f, np.nan) for f in frames])
    return rows


def main(argv: list[str] | None = None) -> int:
    """CLI: print the AUC table (all episodes, then per task) for each frame index."""
    from toolkits.base.metrics import auc
    from toolkits.episodes import EpisodeDataset
    from world_models.dynamics_model import DynamicsModel
    from world_models.state_model import StateModel

    p = argparse.ArgumentParser(
        prog="python -m experiments.harness.value_auc", description=__doc__.splitlines()[0]
    )
    p.add_argument("--model", required=True, help="an observation model directory with a value head")
    p.add_argument("--vae", required=True, help="the dynamics model directory whose VAE the model read")
    p.add_argument("--episodes", nargs="+", required=True, help="recorded episode directories")
    p.add_argument("--frames", nargs="+", type=int, default=[0, 10, 20, 40])
    args = p.parse_args(argv)
    for flag, path, needs in (("--model", args.model, "config.json"), ("--vae", args.vae, "config.json"),
                              *(("--episodes", d, "index.json") for d in args.episodes)):  # fmt: skip
        if not os.path.isfile(os.path.join(path, needs)):
            p.error(f"{flag}={path}: no {needs} there")
    if any(f < 0 for f in args.frames):
        p.error(f"--frames={args.frames}: frame indices >= 0")
    model = StateModel.from_pretrained(args.model)
    if not model.cfg.value_head:
        p.error(f"--model={args.model}: has no value head (train it with model.value_head=true)")
    vae = DynamicsModel.from_pretrained(args.vae).eval()
    rows: dict[str, list] = defaultdict(list)
    for d in args.episodes:
        for key, values in frame_values(model, vae, EpisodeDataset(d), args.frames).items():
            rows[key] += values
    tasks, success, values = np.array(rows["task"]), np.array(rows["success"]), np.array(rows["values"])
    print(f"{len(success)} episodes, {int(success.sum())} successes")
    print("| episodes | " + " | ".join(f"frame {f}" for f in args.frames) + " |")
    print("|---|" + "---|" * len(args.frames))
    for name in ["all", *sorted(set(tasks))]:
        pick = np.ones(len(tasks), bool) if name == "all" else tasks == name
        cells = []
        for j in range(len(args.frames)):
            have = pick & ~np.isnan(values[:, j])
            y = success[have]
            cells.append(f"{auc(values[have, j], y):.3f} ({have.sum()})" if 0 < y.sum() < len(y) else "n/a")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
