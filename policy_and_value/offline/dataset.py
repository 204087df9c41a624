"""Action-chunk samples from collected episodes: (images, state, prompt) at step t -> actions t..t+H-1.

Episodes are read once into memory (uint8 frames). A sample near an episode's end pads the chunk with
zeros and masks the padded actions out of the loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from policy_and_value.envs.metaworld_tasks import select_state
from toolkits.episodes import EpisodeDataset


@dataclass
class ChunkBatch:
    """One batch: an observation dict in the env contract plus target chunks and their mask."""

    obs: dict
    actions: torch.Tensor  # [N, H, A] env units
    action_mask: torch.Tensor  # [N, H] 1 where the action was executed in the episode
    advantages: torch.Tensor | None = None  # [N] per-step advantages (labelled datasets only)


class ChunkDataset:
    """Every (episode, step) of the selected episodes as a chunk-imitation sample."""

    def __init__(
        self,
        episodes: EpisodeDataset,
        horizon: int,
        state_type: str = "full",
        cameras: list[str] | None = None,
        indices: list[int] | None = None,
        with_advantages: bool = False,
    ):
        self.horizon = horizon
        recorded = list(episodes.info.get("cameras", []))
        if cameras is not None:
            unknown = [c for c in cameras if c not in recorded]
            if unknown:
                raise ValueError(
                    f"data.cameras={cameras}: {unknown} not recorded; the dataset has {recorded}"
                )
        views = [recorded.index(c) for c in cameras] if cameras is not None else None
        self.cameras = cameras if cameras is not None else recorded
        frames, states, actions, prompts, task_names, starts, advantages = [], [], [], [], [], [], []
        success: list[bool] = []
        offset = 0
        for i in indices if indices is not None else range(len(episodes)):
            ep = episodes[i]
            t = len(ep.actions)
            img = ep.images[:t] if views is None else ep.images[:t, views]
            frames.append(torch.from_numpy(np.ascontiguousarray(img)))
            st = select_state(ep.state[:t], state_type)
            states.append(torch.from_numpy(st.astype(np.float32)))
            actions.append(torch.from_numpy(ep.actions.astype(np.float32)))
            if with_advantages:
                advantages.append(torch.from_numpy(episodes.read(i, "advantages").astype(np.float32)))
            prompts += [ep.meta["prompt"]] * t
            task_names += [ep.meta["task"]] * t
            success += [bool(ep.meta["success_once"])] * t
            starts.append((offset, t))
            offset += t
        if not starts:
            raise ValueError("no episodes selected (check data.path, data.tasks and data.success_only)")
        self.images = torch.cat(frames)  # [M, V, H, W, 3]
        self.state = torch.cat(states)  # [M, S]
        self.actions = torch.cat(actions)  # [M, A]
        self.advantages = torch.cat(advantages) if with_advantages else None  # [M]
        self.prompts = np.array(prompts, dtype=object)
        self.task_names = np.array(task_names, dtype=object)
        self.success = torch.tensor(success, dtype=torch.bool)  # [M] the sample's episode succeeded
        # for each sample: the global indices of its chunk, and which of them lie inside the episode
        end = torch.cat([torch.full((t,), o + t, dtype=torch.long) for o, t in starts])
        idx = torch.arange(offset)[:, None] + torch.arange(horizon)[None]
        self.chunk_mask = idx < end[:, None]
        self.chunk_index = torch.where(self.chunk_mask, idx, end[:, None] - 1)
        self.num_episodes = len(starts)

    def __len__(self) -> int:
        return len(self.state)

    @property
    def tasks(self) -> list[str]:
        return sorted(set(self.task_names.tolist()))

    def batch(self, index: torch.Tensor) -> ChunkBatch:
        """Gather samples ``index`` [N] into a batch."""
        obs = {
            "images": self.images[index],
            "state": self.state[index],
            "prompt": list(self.prompts[index.numpy()]),
        }
        mask = self.chunk_mask[index]
        actions = self.actions[self.chunk_index[index]] * mask[..., None]
        adv = self.advantages[index] if self.advantages is not None else None
        return ChunkBatch(obs, actions, mask.float(), adv)
