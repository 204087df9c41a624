"""How imagination scores the state model's member states: success, the value potential and the reward heads, each
the members' mean less a penalty on their spread (pessimism where the members disagree). A mixin of
``WorldModelEnv`` (it reads the env's ``state_model``, ``cfg``, ``device`` and ``_tasks_one_hot``); the public readers
score a simulator's states as imagination would, for the gauges."""

from __future__ import annotations

import torch


class StateScoring:
    """Scores of member states [K, N, ..., S] for the world-model env, and of given states [N, ..., S]."""

    @torch.no_grad()
    def _scores_of_states(self, states: torch.Tensor) -> torch.Tensor:
        """The state model's success score of member states [K, N, ..., S] -> [N, ...]: the members' mean
        probability, less ``success_uncertainty_penalty`` x their std (floored at 0)."""
        probs = torch.sigmoid(self.state_model.success_logits(states.to(self.device), self._tasks_one_hot))
        score = probs.mean(0)
        if self.cfg.success_uncertainty_penalty:
            score = (score - self.cfg.success_uncertainty_penalty * self._spread(probs)).clamp(min=0.0)
        return score.cpu()

    @torch.no_grad()
    def _reward_members(self, states: torch.Tensor) -> torch.Tensor:
        """Each member's reward-head value of member states [K, N, ..., S] -> [K, N, ...]."""
        return self.state_model.reward_values(states.to(self.device), self._tasks_one_hot).cpu()

    @staticmethod
    def _spread(values: torch.Tensor) -> torch.Tensor:
        """How far the members disagree: the std of per-member values [K, N, ...] -> [N, ...]."""
        return values.std(0, correction=0)

    def _pessimistic(self, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-member rewards [K, N, ...] -> (their mean less ``reward_uncertainty_penalty`` x their spread,
        the spread), both [N, ...]."""
        spread = self._spread(values)
        return values.mean(0) - self.cfg.reward_uncertainty_penalty * spread, spread

    @torch.no_grad()
    def _values_of_states(self, states: torch.Tensor) -> torch.Tensor:
        """The value heads' discounted chance of success of member states [K, N, S] -> [N]: their mean less
        ``reward_uncertainty_penalty`` x their std (the potential of ``reward_mode: value``)."""
        values = torch.sigmoid(self.state_model.value_logits(states.to(self.device), self._tasks_one_hot))
        return self._pessimistic(values)[0].cpu()

    def _rewards_of_states(self, states: torch.Tensor) -> torch.Tensor:
        """The reward imagination pays for member states [K, N, ..., S] -> [N, ...]."""
        return self._pessimistic(self._reward_members(states))[0]

    def _as_members(self, states: torch.Tensor) -> torch.Tensor:
        """Given states [N, ..., S] (e.g. a simulator's) as every member's [K, N, ..., S], for the member-wise heads."""
        return states.float()[None].expand(self.state_model.cfg.ensemble_size, *states.shape)

    def score_states(self, states: torch.Tensor) -> torch.Tensor:
        """The state model's success score of given states [N, ..., S] (e.g. a simulator's) -> [N, ...]."""
        return self._scores_of_states(self._as_members(states))

    def reward_of_states(self, states: torch.Tensor) -> torch.Tensor:
        """The reward head's value of given states [N, S] (e.g. a simulator's) as imagination rewards them
        (members' mean, less the penalty on their spread) -> [N]."""
        return self._rewards_of_states(self._as_members(states))

    @torch.no_grad()
    def reward_spread_of_states(self, states: torch.Tensor) -> torch.Tensor:
        """How far the members' reward heads disagree (std) on given states [N, S] -> [N]: the doubt
        ``reward_uncertainty_penalty`` charges for."""
        return self._spread(self._reward_members(self._as_members(states)))
