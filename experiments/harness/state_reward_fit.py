"""Can Meta-World's shaped reward be read off the state? (What a state world model would need to predict
it in imagination.)

    .venv/bin/python -m experiments.harness.state_reward_fit --data data/outcome60 [--steps 3000] [--seed 0]

Fits one MLP (the state after an action + the task's one-hot -> that action's reward / 10) on the
training split of the episodes (``toolkits.episodes.split_episodes``, the split every trainer uses) and
prints, on the held-out episodes: R^2 per step, and Spearman of predicted against recorded episode
returns, overall and per task. A reward that is a function of the state fits near R^2 = 1; one that
needs what the state leaves out (targets hidden in the simulator, time) does not.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from scipy.stats import spearmanr

from toolkits.episodes import EpisodeDataset, split_episodes


def episode_rows(
    episodes: EpisodeDataset, ids: list[int], tasks: list[str]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per episode: inputs [T, S + tasks] (the state each action led to, task one-hot) and rewards [T] / 10."""
    rows = []
    for i in ids:
        states, rewards = episodes.read(i, "state"), episodes.read(i, "rewards")
        one_hot = np.eye(len(tasks), dtype=np.float32)[tasks.index(episodes.entries[i]["task"])]
        inputs = np.concatenate([states[1 : len(rewards) + 1], np.tile(one_hot, (len(rewards), 1))], axis=1)
        rows.append((inputs.astype(np.float32), rewards.astype(np.float32) / 10.0))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="an episode directory (collect_episodes' format)")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--holdout", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    episodes = EpisodeDataset(args.data)
    tasks = sorted({e["task"] for e in episodes.entries})
    train_ids, held_ids = split_episodes(episodes.entries, args.holdout, args.seed)
    train, held = episode_rows(episodes, train_ids, tasks), episode_rows(episodes, held_ids, tasks)
    x = torch.from_numpy(np.concatenate([a for a, _ in train]))
    y = torch.from_numpy(np.concatenate([b for _, b in train]))
    mean, std = x.mean(0), x.std(0) + 1e-6
    net = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], 256), torch.nn.SiLU(), torch.nn.Linear(256, 256), torch.nn.SiLU(),
        torch.nn.Linear(256, 1),
    )  # fmt: skip
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for _ in range(args.steps):
        idx = torch.randint(0, len(x), (512,))
        loss = (net((x[idx] - mean) / std).squeeze(-1) - y[idx]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        predicted = [net((torch.from_numpy(a) - mean) / std).squeeze(-1).numpy() for a, _ in held]
    recorded = [b for _, b in held]
    flat_p, flat_r = np.concatenate(predicted), np.concatenate(recorded)
    r2 = 1 - np.mean((flat_p - flat_r) ** 2) / np.var(flat_r)
    ret_p, ret_r = np.array([a.sum() for a in predicted]), np.array([b.sum() for b in recorded])
    held_tasks = np.array([episodes.entries[i]["task"] for i in held_ids])
    print(f"{len(train_ids)} training / {len(held_ids)} held-out episodes, {args.steps} steps")
    print(f"held out: R^2 per step {r2:.3f}; Spearman of episode returns {spearmanr(ret_p, ret_r)[0]:.3f}")
    for task in tasks:
        m = held_tasks == task
        if m.sum() > 2:
            print(
                f"  {task}: Spearman of returns {spearmanr(ret_p[m], ret_r[m])[0]:.3f} ({m.sum()} episodes)"
            )


if __name__ == "__main__":
    main()
