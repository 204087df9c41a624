"""Train a progress/value model or a success classifier on collected episodes.

    python -m reward_models.train [reward/progress_tiny] data.path=data/mt10 output_dir=logs/rm

Every frame of every episode is a sample. ``progress``: frames of successful episodes regress to
i / T; frames of failed episodes regress to a TD target (``gamma`` x the target network's value of the
next frame, 0 at the last frame), which pulls failures down (RISE's recipe). ``success``: binary
cross-entropy on whether the frame shows the task done. One model serves all tasks (prompt-conditioned).
A share of episodes is held out; TensorBoard logs and checkpoints go to ``output_dir``, the final model
to ``<output_dir>/model``.
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from policy_and_value.config.data_checks import check_episode_data
from reward_models.config import RewardModelJob
from toolkits.base.errors import config_error as _fail

MODEL_DIR = "model"


class FrameData:
    """All frames of the selected episodes in memory, with per-frame labels and next-frame links."""

    def __init__(self, episodes, indices: list[int], cameras: list[str] | None):
        from reward_models.targets import progress_labels, success_labels

        recorded = list(episodes.info.get("cameras", []))
        views = [recorded.index(c) for c in cameras] if cameras else None
        frames, progress, done, succ_ep, is_last, nxt, ep_id, prompts = [], [], [], [], [], [], [], []
        offset = 0
        for k, i in enumerate(indices):
            ep = episodes[i]
            img = ep.images if views is None else ep.images[:, views]
            n = len(img)
            frames.append(torch.from_numpy(np.ascontiguousarray(img)))
            ok = bool(ep.meta["success_once"])
            progress.append(progress_labels(n) if ok else np.zeros(n, np.float32))
            done.append(success_labels(ep.success))
            succ_ep += [ok] * n
            is_last += [False] * (n - 1) + [True]
            nxt.append(np.minimum(np.arange(n) + 1, n - 1) + offset)
            ep_id += [k] * n
            prompts += [ep.meta["prompt"]] * n
            offset += n
        self.images = torch.cat(frames)
        self.progress = torch.from_numpy(np.concatenate(progress))
        self.done = torch.from_numpy(np.concatenate(done))
        self.success_episode = torch.tensor(succ_ep)
        self.is_last = torch.tensor(is_last)
        self.next_index = torch.from_numpy(np.concatenate(nxt)).long()
        self.episode = torch.tensor(ep_id)
        self.prompts = np.array(prompts, dtype=object)

    def __len__(self) -> int:
        return len(self.images)


def check_job(job: RewardModelJob) -> None:
    """Path and task checks, one line each, before data is loaded."""
    ds = check_episode_data(job.data.path, job.data.tasks)
    recorded = list(ds.info.get("cameras", []))
    bad = [c for c in job.data.cameras or [] if c not in recorded]
    if bad:
        raise _fail("data.cameras", job.data.cameras, f"{bad} not recorded; the dataset has {recorded}")
    if job.model.kind == "progress" and not any(not e["success_once"] for e in ds.entries):
        print(
            "note: no failed episodes in the dataset; the TD target has nothing to pull down", file=sys.stderr
        )


def train_reward_model(job: RewardModelJob, log=print) -> Path:
    """Train and write ``<output_dir>/model``; returns that directory."""
    from policy_and_value.offline.augment import random_shift
    from reward_models.configuration import RewardModelConfig
    from reward_models.modeling import FrameScorer
    from reward_models.targets import td_targets
    from toolkits.base.metric_logger import MetricLogger
    from toolkits.base.model_dir import replace_dir_atomically
    from toolkits.episodes import EpisodeDataset, split_episodes

    check_job(job)
    torch.manual_seed(job.train.seed)
    episodes = EpisodeDataset(job.data.path, tasks=job.data.tasks)
    train_ids, held_ids = split_episodes(episodes.entries, job.data.holdout_fraction, job.train.seed)
    data = FrameData(episodes, train_ids, job.data.cameras)
    cameras = job.data.cameras or list(episodes.info.get("cameras", []))
    prompts = sorted({e["prompt"] for e in episodes.entries})
    cfg = RewardModelConfig(num_views=len(cameras), prompts=prompts, **job.model.model_dump())
    model = FrameScorer(cfg)
    target = copy.deepcopy(model).requires_grad_(False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=job.train.lr, weight_decay=job.train.weight_decay)
    out = Path(job.output_dir)
    logger = MetricLogger(str(out), ["tensorboard"], "worldrl", "reward_model", job.model_dump())
    n_fail = int((~data.success_episode).sum())
    log(f"reward model ({cfg.kind}): {len(data)} frames of {len(train_ids)} episodes ({n_fail} failed-episode frames), "
        f"{len(held_ids)} episodes held out; cameras {cameras}")  # fmt: skip
    start = time.time()
    for step in range(1, job.train.max_steps + 1):
        idx = torch.randint(0, len(data), (job.train.batch_size,))
        images = random_shift(data.images[idx], job.train.random_shift)[:, None]
        prompt = list(data.prompts[idx.numpy()])
        logits = model.logits(images, prompt)[:, 0]
        if cfg.kind == "success":
            loss = F.binary_cross_entropy_with_logits(logits, data.done[idx])
        else:
            with torch.no_grad():
                nxt = data.next_index[idx]
                next_v = target(data.images[nxt][:, None], list(data.prompts[nxt.numpy()]))[:, 0]
            fail_target = td_targets(next_v, data.is_last[idx], job.train.gamma)
            ok = data.success_episode[idx]
            y = torch.where(ok, data.progress[idx], fail_target)
            w = torch.where(ok, torch.ones_like(y), torch.full_like(y, job.train.failure_weight))
            loss = (w * (torch.sigmoid(logits) - y).pow(2)).sum() / w.sum().clamp(min=1e-6)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            for p_t, p in zip(target.parameters(), model.parameters(), strict=True):
                p_t.lerp_(p, 1 - job.train.target_ema)
        if step % job.train.log_interval == 0 or step == job.train.max_steps:
            metrics = {
                "reward_model/loss": float(loss.detach()),
                "reward_model/frames_per_s": step * job.train.batch_size / (time.time() - start),
            }
            logger.log(metrics, step)
            log(f"reward model step {step}/{job.train.max_steps}: loss={float(loss.detach()):.4f}")
        if step % job.train.save_interval == 0 or step == job.train.max_steps:
            replace_dir_atomically(out / "checkpoints" / f"step_{step}", model.save_pretrained)
    logger.close()
    replace_dir_atomically(out / MODEL_DIR, model.save_pretrained)
    log(f"reward model written to {out / MODEL_DIR}")
    return out / MODEL_DIR


def main(argv: list[str] | None = None) -> int:
    """CLI: compose ``configs/<CONFIG>.yaml`` (default ``reward/progress_tiny``) with overrides, train."""
    from toolkits.base.cli import job_cli

    return job_cli(argv, "reward/progress_tiny", RewardModelJob, check_job, train_reward_model, __doc__)


if __name__ == "__main__":
    sys.exit(main())
