"""How the world-model env turns a chunk's scores into per-action rewards, for each ``reward_mode``:
``chunk_reward`` and the progress modes (``reward_models.rewards``), ``success`` (the outcome alone), ``value`` (the
outcome plus the value potential's change over the chunk) and ``state_reward`` (the reward heads on every state). A
mixin of ``WorldModelEnv`` (it reads the env's ``cfg``, ``chunk``, ``future_frames``, ``offsets`` and the
``StateScoring`` readers), kept apart so the env's step reads as imagine -> score -> reward -> bookkeeping."""

from __future__ import annotations

import numpy as np
import torch

from reward_models.rewards import rewards_from_progress


def frame_rewards_on_actions(
    frame_rewards: torch.Tensor, ends: list[int], first_hit: torch.Tensor, chunk: int, stop_at_success: bool
) -> torch.Tensor:
    """Per-frame rewards [N, T_f] placed on the action that ends each frame (``ends[j]``) -> [N, chunk]; with
    ``stop_at_success`` nothing is paid for frames after the first success frame (``first_hit``)."""
    n = frame_rewards.shape[0]
    rewards = torch.zeros(n, chunk)
    for j, a in enumerate(ends):
        alive = j <= first_hit if stop_at_success else torch.ones(n, dtype=torch.bool)
        rewards[:, a] += torch.where(alive, frame_rewards[:, j], torch.zeros(n))
    return rewards


class ImaginedRewards:
    """Per-action rewards of one imagined chunk for the world-model env (see the module's docstring)."""

    def _chunk_rewards(
        self, path: torch.Tensor | None, progress: torch.Tensor, first_hit: torch.Tensor, mode: str
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(rewards [N, C], the reward heads' spread [N, C]: zeros outside ``state_reward``) of the chunk whose
        member states are ``path`` [K, N, C, S] and whose frames scored ``progress`` [N, 1 + T_f] (the previous
        chunk's last score first); ``first_hit`` is the first frame over the success threshold (T_f: none)."""
        n, c = progress.shape[0], self.chunk
        ends = [o - 1 for o in self.offsets]  # frame j ends on action offsets[j] - 1
        stop_at_success = not self.cfg.ignore_terminations
        spread = torch.zeros(n, c)
        if mode == "state_reward":  # every action's shaped reward, read off the state it led to
            rewards, spread = self._pessimistic(
                self._reward_members(path) * self.cfg.reward_coef
            )  # [N, C] each
            if stop_at_success:  # nothing after the action that ends the first success frame
                last = torch.tensor([*ends, c - 1])[first_hit]
                paid = torch.arange(c) <= last[:, None]
                rewards, spread = rewards * paid, spread * paid
            return rewards, spread
        if mode in ("success", "value"):  # the outcome: reward_coef on the first frame over the threshold
            frame_rewards = (
                torch.arange(self.future_frames) == first_hit[:, None]
            ).float() * self.cfg.reward_coef
        else:
            frame_rewards = rewards_from_progress(progress, mode, self.cfg.reward_coef)  # [N, T_f]
        rewards = frame_rewards_on_actions(frame_rewards, ends, first_hit, c, stop_at_success)
        if mode == "value":  # the potential's change over the chunk, on its last action
            potential = self._values_of_states(path[:, :, -1])
            rewards[:, -1] += potential - torch.from_numpy(self._potential)
            self._potential = potential.numpy().astype(np.float32)
        return rewards, spread
