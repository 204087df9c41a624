"""Quality and speed of a progress reward model on held-out Meta-World episodes, per task.

    .venv/bin/python -m experiments.harness.reward_quality --data DATA [--model-dir DIR | --steps 2000] [--out logs/rq]

DATA is an episode dataset with successful and failed episodes, e.g.
``python -m toolkits.collect_episodes --tasks reach-v3 drawer-close-v3 button-press-topdown-v3
--episodes-per-task 40 --fail-fraction 0.3 --action-noise 0.1 --cameras corner gripperPOV --out DATA``.
Without ``--model-dir`` a progress model is trained on the training split first (same split as
``reward_models.train``). Prints per task: AUC of separating successful from failed held-out episodes by
the final frame's score (target >= 0.9), Spearman correlation of predicted with true progress on
successful held-out episodes (mean over episodes; target >= 0.9), and frames scored per second.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np
import torch
from scipy.stats import spearmanr

from toolkits.base.metrics import auc


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--model-dir", default=None)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--holdout", type=float, default=0.3)
    p.add_argument("--out", default="logs/reward_quality")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    from reward_models.config import RewardModelJob
    from reward_models.modeling import FrameScorer
    from reward_models.targets import progress_labels
    from reward_models.train import train_reward_model
    from toolkits.base.compose import compose_config
    from toolkits.episodes import EpisodeDataset, split_episodes

    start = time.time()
    model_dir = args.model_dir
    if model_dir is None:
        overrides = [f"data.path={args.data}", f"data.holdout_fraction={args.holdout}", f"output_dir={args.out}",
                     f"train.max_steps={args.steps}", f"train.seed={args.seed}", "train.log_interval=500"]  # fmt: skip
        model_dir = str(
            train_reward_model(
                RewardModelJob.model_validate(compose_config("reward/progress_tiny", overrides))
            )
        )
    train_time = time.time() - start
    model = FrameScorer.from_pretrained(model_dir)
    episodes = EpisodeDataset(args.data)
    _, held = split_episodes(episodes.entries, args.holdout, args.seed)

    finals: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    rhos: dict[str, list[float]] = defaultdict(list)
    frames, score_time = 0, 0.0
    for i in held:
        ep = episodes[i]
        images = torch.from_numpy(ep.images)[None]
        t0 = time.perf_counter()
        values = model.score(images, [ep.meta["prompt"]])[0].numpy()
        score_time += time.perf_counter() - t0
        frames += len(values)
        ok = bool(ep.meta["success_once"])
        finals[ep.meta["task"]].append((float(values[-1]), ok))
        if ok and len(values) > 2:
            rhos[ep.meta["task"]].append(float(spearmanr(values, progress_labels(len(values))).statistic))

    # batched throughput, as the world-model env calls it (64 envs x 4 frames x views)
    v = model.cfg.num_views
    batch = torch.randint(
        0, 256, (64, 4, v, model.cfg.image_size, model.cfg.image_size, 3), dtype=torch.uint8
    )
    prompts = [model.cfg.prompts[k % len(model.cfg.prompts)] for k in range(64)]
    model.score(batch, prompts)
    t0, calls = time.perf_counter(), 0
    while time.perf_counter() - t0 < 3.0:
        model.score(batch, prompts)
        calls += 1
    batched_fps = calls * 64 * 4 / (time.perf_counter() - t0)

    print(
        "\n| task | held-out episodes (ok/failed) | AUC final score | Spearman progress (mean over episodes) |\n|---|---|---|---|"
    )
    aucs, all_rho = [], []
    for task in sorted(finals):
        rows = finals[task]
        labels = np.array([ok for _, ok in rows], bool)
        task_auc = auc(np.array([s for s, _ in rows]), labels)
        rho = float(np.mean(rhos[task])) if rhos[task] else float("nan")
        aucs.append(task_auc)
        all_rho += rhos[task]
        print(f"| {task} | {labels.sum()}/{(~labels).sum()} | {task_auc:.3f} | {rho:.3f} |")
    print(f"| all | | {np.nanmean(aucs):.3f} | {np.mean(all_rho):.3f} |")
    print(f"\nscoring: {frames / score_time:.0f} frames/s one episode at a time, {batched_fps:.0f} frames/s batched "
          f"(64 envs x 4 frames x {v} views); training {train_time:.0f} s; model {model_dir}")  # fmt: skip


if __name__ == "__main__":
    main()
