"""Imitation (SFT) training of a policy on collected episodes: flow matching for pi0-family policies.

    python -m policy_and_value.offline.train_sft offline/sft_pi0_tiny data.path=data/mt10 \\
        output_dir=logs/sft_mt10 train.max_steps=3000

Normalisation statistics (quantile or mean/std) come from the training episodes and are saved with
the weights; prompts are the tasks' instructions (multi-task); images get random shifts and
brightness/contrast jitter. Checkpoints (policy directory + optimiser, scheduler, step and RNG state)
are written atomically every ``train.save_interval`` steps and resumed from automatically. The result,
``<output_dir>/policy``, is a directory that ``rollout.model_dir`` accepts.

An advantage-conditioned policy (``model.pi0.with_advantage_condition``, or an ``init_model_dir`` saved
with it) trains on labelled episodes (``python -m reward_models.label``) as the RL actor's IL mode does:
each sample's prompt carries the bin (``model.pi0.advantage_bin_edges``) of its labelled advantage, and a
share ``data.advantage_dropout`` of them none (classifier-free guidance); deployment asks for the best bin.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch

from policy_and_value.config.data_checks import check_episode_data
from policy_and_value.offline.config import SFTConfig
from toolkits.base.errors import config_error as _fail
from toolkits.base.setting import check_state_input

CHECKPOINTS = "checkpoints"
POLICY_DIR = "policy"


def check_config(cfg: SFTConfig) -> None:
    """Cross-field and path checks, one line each, before anything is loaded."""
    check_state_input(cfg.setting, cfg.data.state_type)
    dataset = check_episode_data(cfg.data.path, cfg.data.tasks)
    chosen = [e for e in dataset.entries if not cfg.data.tasks or e.get("task") in cfg.data.tasks]
    if cfg.data.success_only and not any(e.get("success_once") for e in chosen):
        raise _fail(
            "data.success_only", True,
            f"data.path={cfg.data.path} has no successful episode of the {len(chosen)} chosen; "
            "set data.success_only=false to train on them all (e.g. advantage-conditioned)",
        )  # fmt: skip
    if cfg.model.policy_type not in ("pi0", "pi05"):
        raise _fail("model.policy_type", cfg.model.policy_type, "imitation training supports pi0 and pi05")
    if cfg.init_model_dir is not None and not os.path.isfile(os.path.join(cfg.init_model_dir, "config.json")):
        raise _fail("init_model_dir", cfg.init_model_dir, "not a policy directory (no config.json)")
    if cfg.norm_stats_from == "init" and (
        cfg.init_model_dir is None or not os.path.isfile(os.path.join(cfg.init_model_dir, "norm_stats.json"))
    ):
        raise _fail(
            "norm_stats_from", "init", f"init_model_dir={cfg.init_model_dir} has no norm_stats.json to keep"
        )
    if advantage_conditioned(cfg) and "labels" not in dataset.info:
        raise _needs_labels(cfg)
    if "advantage_dropout" in cfg.data.model_fields_set and not advantage_conditioned(cfg):
        raise _fail(
            "data.advantage_dropout", cfg.data.advantage_dropout,
            "only used with model.pi0.with_advantage_condition=true (an unconditioned policy has no advantage to drop)",
        )  # fmt: skip


def _needs_labels(cfg: SFTConfig) -> Exception:
    return _fail(
        "model.pi0.with_advantage_condition", True,
        f"needs per-step advantages in data.path={cfg.data.path} (label it with python -m reward_models.label)",
    )  # fmt: skip


def advantage_conditioned(cfg: SFTConfig) -> bool:
    """Whether the trained policy reads an advantage: ``model.pi0.with_advantage_condition`` when set,
    else what ``init_model_dir`` was saved with (the policy built from it keeps that)."""
    if "with_advantage_condition" in cfg.model.pi0:
        return bool(cfg.model.pi0["with_advantage_condition"])
    if cfg.init_model_dir is not None:
        saved = json.loads(Path(cfg.init_model_dir, "config.json").read_text())
        return bool(saved.get("with_advantage_condition", False))
    return False


def advantage_bins(policy, advantages: torch.Tensor, dropout: float = 0.0) -> torch.Tensor:
    """Prompt classes [N] of labelled advantages [N], as the RL actor's IL mode forms them: the
    policy's ``advantage_to_bin``, and with probability ``dropout`` (global RNG) -1, the prompt without
    an advantage (classifier-free guidance training)."""
    bins = policy.advantage_to_bin(advantages)
    drop = torch.rand(bins.shape) < dropout
    return torch.where(drop.to(bins.device), torch.full_like(bins, -1), bins)


def latest_checkpoint(output_dir: str) -> str | None:
    """``<output_dir>/checkpoints/<latest>`` when a completed checkpoint exists."""
    latest = os.path.join(output_dir, CHECKPOINTS, "latest")
    if not os.path.isfile(latest):
        return None
    path = os.path.join(output_dir, CHECKPOINTS, Path(latest).read_text().strip())
    return path if os.path.isdir(path) else None


def train_sft(cfg: SFTConfig, log=print) -> Path:
    """Train, checkpoint and write ``<output_dir>/policy``; returns that directory."""
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.envs.metaworld_tasks import select_state
    from policy_and_value.models.pi0 import Stats, from_pretrained, save_pretrained
    from policy_and_value.models.registry import make_policy
    from policy_and_value.offline.augment import color_jitter, random_shift
    from policy_and_value.offline.dataset import ChunkDataset
    from toolkits.base.checkpoint import commit, load_runner_state, save_runner_state, temp_dir_for
    from toolkits.base.lr_schedule import warmup_cosine_lambda
    from toolkits.base.metric_logger import MetricLogger
    from toolkits.base.model_dir import replace_dir_atomically
    from toolkits.base.seeding import get_rng_state, seed_everything, set_rng_state
    from toolkits.episodes import EpisodeDataset, split_episodes

    check_config(cfg)
    seed_everything(cfg.train.seed)
    success = True if cfg.data.success_only else None
    episodes = EpisodeDataset(cfg.data.path, tasks=cfg.data.tasks, success=success)
    train_ids, held_ids = split_episodes(episodes.entries, cfg.data.holdout_fraction, cfg.train.seed)
    first = episodes[train_ids[0]]
    cameras = cfg.data.cameras or list(episodes.info.get("cameras", []))
    state_dim = select_state(first.state, cfg.data.state_type).shape[1]
    spec = EnvSpec(
        action_dim=first.actions.shape[1],
        num_action_chunks=cfg.model.num_action_chunks or 4,
        state_dim=state_dim,
        image_shape=(len(cameras), *first.images.shape[2:4]),
        tasks=tuple(episodes.tasks),
    )
    resume_from = latest_checkpoint(cfg.output_dir) if cfg.resume else None
    if resume_from:
        policy = from_pretrained(os.path.join(resume_from, POLICY_DIR))
    else:
        torch.manual_seed(cfg.train.seed)
        policy = make_policy(cfg.model, spec, model_dir=cfg.init_model_dir)
        policy.cfg.norm_mode = cfg.norm_mode
        policy.normalizer.mode = cfg.norm_mode
    horizon = policy.cfg.chunk_size
    conditioned = policy.cfg.with_advantage_condition
    if conditioned and "labels" not in episodes.info:  # e.g. resumed from a checkpoint saved conditioned
        raise _needs_labels(cfg)
    chunks = dict(state_type=cfg.data.state_type, cameras=cfg.data.cameras, with_advantages=conditioned)
    train = ChunkDataset(episodes, horizon, indices=train_ids, **chunks)
    held = ChunkDataset(episodes, horizon, indices=held_ids, **chunks) if held_ids else None
    if not resume_from and cfg.norm_stats_from == "data":
        policy.set_norm_stats(
            {"state": Stats.from_data(train.state), "actions": Stats.from_data(train.actions)}
        )
    log(
        f"sft: {train.num_episodes} training episodes ({len(train)} samples), "
        f"{held.num_episodes if held else 0} held out; tasks {train.tasks}; cameras {cameras}"
    )

    params = [p for p in policy.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.train.lr, weight_decay=cfg.train.weight_decay)
    schedule = warmup_cosine_lambda(cfg.train.warmup_steps, cfg.train.max_steps, cfg.train.min_lr_ratio)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    step = 0
    if resume_from:
        step, state = load_runner_state(resume_from)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        log(f"sft: resumed from {resume_from} at step {step}")
    out = Path(cfg.output_dir)
    logger = MetricLogger(str(out), ["tensorboard"], "worldrl", "sft", cfg.model_dump())

    def save(at_step: int) -> None:
        final = os.path.join(cfg.output_dir, CHECKPOINTS, f"step_{at_step}")
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = temp_dir_for(final)
        save_pretrained(policy, os.path.join(tmp, POLICY_DIR))
        state = {
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": get_rng_state(),
        }
        save_runner_state(tmp, at_step, state)
        commit(tmp, final)

    aug = cfg.augment
    policy.train()
    start, seen = time.time(), 0
    while step < cfg.train.max_steps:
        index = torch.randint(0, len(train), (cfg.train.batch_size,))
        batch = train.batch(index)
        images = color_jitter(
            random_shift(batch.obs["images"], aug.random_shift), aug.brightness, aug.contrast
        )
        obs = {**batch.obs, "images": images}
        if aug.state_noise > 0:
            scale = policy.normalizer.unnormalize(
                "state", torch.ones_like(obs["state"])
            ) - policy.normalizer.unnormalize("state", torch.zeros_like(obs["state"]))
            obs["state"] = obs["state"] + torch.randn_like(obs["state"]) * aug.state_noise * scale
        fm_batch = {"obs": obs, "actions": batch.actions, "action_mask": batch.action_mask}
        if conditioned:  # the chunk's labelled advantage (at its first step) picks the prompt's bin
            fm_batch["advantage_bin"] = advantage_bins(policy, batch.advantages, cfg.data.advantage_dropout)
        loss = policy.flow_matching_loss(fm_batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.train.clip_grad or float("inf"))
        optimizer.step()
        scheduler.step()
        step += 1
        seen += cfg.train.batch_size
        if step % cfg.train.log_interval == 0 or step == cfg.train.max_steps:
            metrics = {
                "sft/loss": float(loss.detach()),
                "sft/grad_norm": float(grad_norm),
                "sft/lr": optimizer.param_groups[0]["lr"],
                "sft/samples_per_s": seen / (time.time() - start),
            }
            if held is not None and (step % cfg.train.save_interval == 0 or step == cfg.train.max_steps):
                metrics["sft/heldout_loss"] = heldout_loss(policy, held)
            logger.log(metrics, step)
            log(
                f"sft step {step}/{cfg.train.max_steps}: "
                + ", ".join(f"{k[4:]}={v:.4g}" for k, v in metrics.items())
            )
        if step % cfg.train.save_interval == 0 or step == cfg.train.max_steps:
            save(step)
    logger.close()
    final_dir = replace_dir_atomically(out / POLICY_DIR, lambda tmp: save_pretrained(policy, tmp))
    log(f"sft: policy written to {final_dir} (use it as rollout.model_dir)")
    return final_dir


@torch.no_grad()
def heldout_loss(policy: torch.nn.Module, held, max_samples: int = 256, batch_size: int = 64) -> float:
    """Flow-matching loss on held-out samples with fixed noise and times (comparable across steps); an
    advantage-conditioned policy on labelled samples reads each sample's advantage bin (no dropout)."""
    gen = torch.Generator().manual_seed(0)
    conditioned = policy.cfg.with_advantage_condition and getattr(held, "advantages", None) is not None
    index = torch.randperm(len(held), generator=gen)[:max_samples]
    total, count = 0.0, 0
    was_training = policy.training
    policy.eval()
    for part in index.split(batch_size):
        batch = held.batch(part)
        n, cfg = len(part), policy.cfg
        noise = torch.randn(n, cfg.chunk_size, cfg.max_action_dim, generator=gen)
        t = torch.rand(n, generator=gen) * 0.999 + 0.001
        fm_batch = {
            "obs": batch.obs,
            "actions": batch.actions,
            "action_mask": batch.action_mask,
            "noise": noise,
            "time": t,
        }
        if conditioned:
            fm_batch["advantage_bin"] = policy.advantage_to_bin(batch.advantages)
        loss = policy.flow_matching_loss(fm_batch)
        total += float(loss) * n
        count += n
    policy.train(was_training)
    return total / count


def main(argv: list[str] | None = None) -> int:
    """CLI: compose ``configs/<CONFIG>.yaml`` (default ``offline/sft_pi0_tiny``) with overrides, train."""
    from toolkits.base.cli import job_cli

    return job_cli(argv, "offline/sft_pi0_tiny", SFTConfig, check_config, train_sft, __doc__)


if __name__ == "__main__":
    sys.exit(main())
