"""RL algorithms: advantage estimators and credit assignment, PPO losses, advantage-conditioned
imitation batches and the optimiser (LR schedules: ``toolkits.base.lr_schedule``)."""

from policy_and_value.algorithms.advantages import (
    compute_gae,
    compute_grpo,
    group_returns,
    group_returns_to_go,
    grpo_credit,
    mixed_groups,
    normalise_in_groups,
    normalise_to_go_in_groups,
    normalize_advantages,
)
from policy_and_value.algorithms.credit import assign_credit
from policy_and_value.algorithms.imitation import imitation_batch, selected_chunks
from policy_and_value.algorithms.losses import (
    broadcast_to_logprob,
    explained_variance,
    masked_mean,
    ppo_policy_loss,
    value_loss,
)
from policy_and_value.algorithms.optimizer import build_optimizer, scheduled_optimizer_steps, split_value_head
from policy_and_value.algorithms.registry import get_advantage_fn

__all__ = [
    "assign_credit",
    "broadcast_to_logprob",
    "build_optimizer",
    "compute_gae",
    "compute_grpo",
    "group_returns",
    "group_returns_to_go",
    "grpo_credit",
    "normalise_in_groups",
    "normalise_to_go_in_groups",
    "explained_variance",
    "get_advantage_fn",
    "imitation_batch",
    "masked_mean",
    "mixed_groups",
    "normalize_advantages",
    "ppo_policy_loss",
    "scheduled_optimizer_steps",
    "selected_chunks",
    "split_value_head",
    "value_loss",
]
