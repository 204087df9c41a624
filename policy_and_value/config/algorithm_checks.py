"""Checks of ``algorithm`` and ``actor``: batch sizes that divide the rollouts, and the options of one
training mode (RL or IL) or one advantage type (GAE or GRPO) used with another."""

from __future__ import annotations

import os

from policy_and_value.config.schema import JobConfig
from toolkits.base.errors import config_error


def check_batches(cfg: JobConfig, ranks: dict[str, int]) -> None:
    """Global and micro batch sizes divide the chunks one step collects over the actor ranks."""
    actor, algo = cfg.actor, cfg.algorithm
    if actor.global_batch_size % (actor.micro_batch_size * ranks["actor"]):
        raise config_error(
            "actor.global_batch_size", actor.global_batch_size,
            f"must be a multiple of actor.micro_batch_size x actor ranks = {actor.micro_batch_size} x {ranks['actor']}",
        )  # fmt: skip
    samples = cfg.env.train.num_envs * algo.n_chunk_steps * algo.rollout_epoch
    if samples % actor.global_batch_size:
        raise config_error(
            "actor.global_batch_size", actor.global_batch_size,
            f"must divide the {samples} samples per step (env.train.num_envs x algorithm.n_chunk_steps x "
            "algorithm.rollout_epoch)",
        )  # fmt: skip
    if actor.shard_optimizer and ranks["actor"] < 2:
        raise config_error(
            "actor.shard_optimizer", True,
            f"splits the optimiser state over actor ranks; the placement gives {ranks['actor']} (place the "
            "actor on 2 or more devices, e.g. cluster.component_placement.actor=0-1)",
        )  # fmt: skip
    resume = cfg.runner.resume_dir
    if resume is not None and os.path.isdir(os.path.join(resume, "actor")):
        from toolkits.base.checkpoint import optimizer_shards

        saved, _ = optimizer_shards(os.path.join(resume, "actor"))
        wanted = ranks["actor"] if actor.shard_optimizer else 0
        if saved != wanted:
            said = f"sharded over {saved} actor ranks" if saved else "not sharded"
            raise config_error(
                "actor.shard_optimizer", actor.shard_optimizer,
                f"runner.resume_dir={resume} holds an optimiser {said}; resume with the same "
                "actor.shard_optimizer and number of actor ranks",
            )  # fmt: skip
    columns = cfg.env.train.num_envs * algo.rollout_epoch
    if columns % ranks["actor"]:
        raise config_error(
            "env.train.num_envs", cfg.env.train.num_envs,
            f"num_envs x rollout_epoch = {columns} must be divisible by the {ranks['actor']} actor ranks",
        )  # fmt: skip
    if algo.adv_type == "grpo" and (columns // ranks["actor"]) % algo.group_size:
        raise config_error(
            "algorithm.group_size", algo.group_size,
            f"must divide the {columns // ranks['actor']} env columns each of the {ranks['actor']} actor ranks "
            "trains on (a GRPO group cannot be split between ranks)",
        )  # fmt: skip


def check_algorithm(cfg: JobConfig) -> None:
    """Options that belong to one training mode or advantage type are not used with another."""
    algo, env = cfg.algorithm, cfg.env.train
    if algo.logprob_type == "chunk_level" and algo.reward_type != "chunk_level":
        raise config_error(
            "algorithm.logprob_type",
            algo.logprob_type,
            "chunk_level requires algorithm.reward_type=chunk_level",
        )
    if algo.adv_type == "grpo":
        if algo.group_size < 2:
            raise config_error("algorithm.group_size", algo.group_size, "grpo needs group_size >= 2")
        if env.group_size != algo.group_size:
            raise config_error(
                "env.train.group_size",
                env.group_size,
                f"must equal algorithm.group_size={algo.group_size} for grpo",
            )
        if not env.use_fixed_reset_state_ids:
            raise config_error(
                "env.train.use_fixed_reset_state_ids",
                False,
                "grpo needs true (a group shares one reset state)",
            )
        if env.auto_reset:
            raise config_error("env.train.auto_reset", True, "grpo scores whole episodes: set false")
    elif not cfg.model.add_value_head:
        raise config_error("model.add_value_head", False, "adv_type gae needs a value head")
    if algo.critic_epochs and algo.adv_type != "gae":
        raise config_error(
            "algorithm.critic_epochs", algo.critic_epochs, f"fits the critic GAE reads: needs adv_type gae, not {algo.adv_type}"
        )  # fmt: skip
    if algo.drop_uniform_groups and algo.adv_type != "grpo":
        raise config_error(
            "algorithm.drop_uniform_groups", True, f"drops GRPO groups: needs adv_type grpo, not {algo.adv_type}"
        )  # fmt: skip
    if algo.grpo_return != "episode" and algo.adv_type != "grpo":
        raise config_error(
            "algorithm.grpo_return", algo.grpo_return, f"credits GRPO's chunks: needs adv_type grpo, not {algo.adv_type}"
        )  # fmt: skip
    ablation = cfg.ablation
    if ablation.shuffle_advantages and ablation.reverse_advantages:
        raise config_error(
            "ablation.reverse_advantages", True, "one advantage ablation at a time: shuffle_advantages is true too"
        )  # fmt: skip
    if ablation.shuffle_advantages_of:
        names = [str(g.get("name")) for g in env.groups]
        unknown = [n for n in ablation.shuffle_advantages_of if n not in names]
        if unknown:
            raise config_error(
                "ablation.shuffle_advantages_of", unknown[0], f"names env groups: one of {names or 'env.train.groups (none set)'}"
            )  # fmt: skip
        if ablation.shuffle_advantages or ablation.reverse_advantages:
            raise config_error(
                "ablation.shuffle_advantages_of", ablation.shuffle_advantages_of,
                "one advantage ablation at a time: shuffle_advantages or reverse_advantages is true too",
            )  # fmt: skip
    if algo.imitation_replay_size and algo.imitation_min_advantage is None:
        raise config_error(
            "algorithm.imitation_replay_size", algo.imitation_replay_size,
            "replays the chunks filtered imitation selected: needs algorithm.imitation_min_advantage",
        )  # fmt: skip
    if algo.normalize_advantages_by == "env_group":
        if not algo.normalize_advantages:
            raise config_error(
                "algorithm.normalize_advantages_by", "env_group", "needs algorithm.normalize_advantages true"
            )  # fmt: skip
        if not env.groups:
            raise config_error(
                "algorithm.normalize_advantages_by", "env_group",
                "whitens each env group on its own: needs env.train.groups (or set batch)",
            )  # fmt: skip
    for key, (mode, what) in _ONE_MODE_KEYS.items():
        value = getattr(algo, key)
        if value is not None and algo.train_mode != mode:
            raise config_error(f"algorithm.{key}", value, f"applies to train_mode {mode} ({what}): set null")


# algorithm keys that mean something under one train_mode only: (that mode, what they set there)


_ONE_MODE_KEYS = {
    "target_kl": ("RL", "PPO's KL to the rollout policy"),
    "imitation_min_advantage": ("IL", "which chunks are imitated"),
}
