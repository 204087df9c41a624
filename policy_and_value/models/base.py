"""The policy contract: every policy the rollout and actor workers run is a ``BasePolicy``."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from policy_and_value.envs.base import Observation


@dataclass
class PolicyOutput:
    """What ``predict`` returns for a batch of N observations.

    ``actions`` [N, C, A] are in env units (un-normalised). ``logprob`` has the shape that
    ``logprob_type`` selects: chunk_level [N], action_level [N, C], token_level [N, C, A].
    ``value`` is [N] (chunk-level rewards) or [N, C] (action-level rewards), or None without a critic.
    ``replay`` holds the tensors (batched over N on dim 0) that ``evaluate`` needs to recompute the
    same log-prob: for a Gaussian policy the raw sampled actions, for a flow policy the noise path.
    """

    actions: torch.Tensor
    logprob: torch.Tensor
    value: torch.Tensor | None
    replay: dict[str, torch.Tensor]


class BasePolicy(nn.Module, abc.ABC):
    """An actor(-critic) over action chunks."""

    action_dim: int
    num_action_chunks: int

    @abc.abstractmethod
    def predict(self, obs: Observation, mode: str = "train") -> PolicyOutput:
        """Act on a batch of observations. mode: "train" samples, "eval" is deterministic."""

    @abc.abstractmethod
    def evaluate(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Recompute (logprob, value, entropy) for ``batch`` = {"obs": Observation, **replay}.

        Shapes match ``predict``; entropy has the logprob's shape.
        """
