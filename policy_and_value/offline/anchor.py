"""Recorded episodes that anchor on-policy training (``algorithm.offline_data_coef``).

Imitating only its own imagined chunks random-walks a policy away from where imitation left it; RISE
trains on a balance of the offline data and imagined rollouts, and PPO can add the same flow-matching
term as a behaviour-cloning loss (DAPG). The actor draws as many offline samples as each micro batch
has rollout samples, with its own generator (checkpointed, so a resumed run draws the same samples).
"""

from __future__ import annotations

from typing import Any

import torch

from policy_and_value.offline.dataset import ChunkDataset
from toolkits.episodes import EpisodeDataset


class OfflineAnchor:
    """The episodes of the train tasks under ``path`` as ``flow_matching_loss`` batches."""

    def __init__(
        self, path: str, tasks: list[str], horizon: int, state_type: str, cameras: list[str], seed: int
    ):
        episodes = EpisodeDataset(path, tasks=tasks)
        labelled = "labels" in episodes.info  # reward_models.label added per-step advantages
        self.data = ChunkDataset(episodes, horizon, state_type, cameras, with_advantages=labelled)
        self.gen = torch.Generator().manual_seed(seed)

    def sample(self, n: int, policy: Any) -> dict[str, Any]:
        """``n`` random offline chunks; an advantage-conditioned policy's prompt gets the bin of the
        labelled advantage, or without labels the best bin for successful episodes and bin 0 otherwise."""
        index = torch.randint(len(self.data), (n,), generator=self.gen)
        chunk = self.data.batch(index)
        batch = {"obs": chunk.obs, "actions": chunk.actions, "action_mask": chunk.action_mask}
        if policy.cfg.with_advantage_condition:
            if chunk.advantages is not None:
                batch["advantage_bin"] = policy.advantage_to_bin(chunk.advantages)
            else:
                best = torch.full((n,), policy.best_advantage_bin, dtype=torch.long)
                batch["advantage_bin"] = torch.where(self.data.success[index], best, 0)
        return batch
