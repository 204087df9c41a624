"""Training samples for the dynamics model from collected episodes: history frames, the action chunk,
and the frames (and state) that follow it.

For a start index t: history = frames t-T_h+1 .. t (clamped at the episode's first frame), actions =
actions t .. t+C-1, future frame j (of T_f) = the frame after action t + ((j+1) C) // T_f - 1, next state =
the state after the chunk. Only starts whose whole chunk lies inside the episode are used.
"""

from __future__ import annotations

import numpy as np
import torch

from policy_and_value.envs.metaworld_tasks import select_state
from world_models.dynamics_config import frame_offsets


class ChunkTransitions:
    """All (episode, start) transitions of the selected episodes, held in memory."""

    def __init__(
        self, episodes, indices: list[int], history: int, future: int, chunk: int, state_type: str = "full"
    ):
        frames, states, actions, prompts = [], [], [], []
        hist_idx, fut_idx, act_idx, state_idx, next_state_idx, episode_of = [], [], [], [], [], []
        f_off = a_off = 0
        offsets = frame_offsets(chunk, future)
        for i in indices:
            ep = episodes[i]
            t_len = len(ep.actions)
            frames.append(torch.from_numpy(ep.images))
            st = select_state(ep.state, state_type)
            states.append(torch.from_numpy(st.astype(np.float32)))
            actions.append(torch.from_numpy(ep.actions.astype(np.float32)))
            for t in range(0, t_len - chunk + 1):
                hist_idx.append([f_off + max(0, t - history + 1 + k) for k in range(history)])
                fut_idx.append([f_off + t + o for o in offsets])
                act_idx.append([a_off + t + k for k in range(chunk)])
                state_idx.append(f_off + t)
                next_state_idx.append(f_off + t + chunk)
                prompts.append(ep.meta["prompt"])
                episode_of.append(i)
            f_off += t_len + 1
            a_off += t_len
        if not hist_idx:
            raise ValueError("no transitions: every selected episode is shorter than one action chunk")
        self.frames = torch.cat(frames)
        self.states = torch.cat(states)
        self.actions = torch.cat(actions)
        self.hist_idx = torch.tensor(hist_idx)
        self.fut_idx = torch.tensor(fut_idx)
        self.act_idx = torch.tensor(act_idx)
        self.state_idx = torch.tensor(state_idx)
        self.next_state_idx = torch.tensor(next_state_idx)
        self.prompts = np.array(prompts, dtype=object)
        self.episode_of = np.array(episode_of)  # dataset index of each transition's episode

    def __len__(self) -> int:
        return len(self.hist_idx)

    def batch(self, index: torch.Tensor) -> dict:
        """history_images [N, T_h, V, H, W, 3], future_images [N, T_f, ...], state, next_state, actions, prompt."""
        return {
            "history_images": self.frames[self.hist_idx[index]],
            "future_images": self.frames[self.fut_idx[index]],
            "state": self.states[self.state_idx[index]],
            "next_state": self.states[self.next_state_idx[index]],
            "actions": self.actions[self.act_idx[index]],
            "prompt": list(self.prompts[index.numpy()]),
        }
