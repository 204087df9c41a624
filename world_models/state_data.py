"""Training windows for the state model: from every step of every episode, the next ``horizon`` chunks of
actions, the states after each action, their rewards and the success flags, padded past the episode's end and masked.

Windows that run past an episode's end keep zero actions and the last state, with mask 0 there, so the
success chunk at the end of a successful episode (often shorter than a chunk) is trained on too.
An observation model's state appends per-frame ``features`` (its latents' components) to the proprioception, and
``success_labels="episode_end"`` reads success from the episode's outcome alone (what a robot's operator records:
positive on its last frame when it succeeded), not from the simulator's per-step flag; an episode whose outcome is
unknown (a recording that ended without one: ``success_once`` null) then trains the dynamics but not the success
head (``labelled`` 0 on its steps).
"""

from __future__ import annotations

import numpy as np
import torch

from policy_and_value.envs.metaworld_tasks import select_state


class StateWindows:
    """All windows of the selected episodes, gathered from flat padded arrays held in memory."""

    def __init__(
        self,
        episodes,
        indices: list[int],
        chunk: int,
        horizon: int,
        state_type: str = "full",
        features: dict[int, np.ndarray] | None = None,
        success_labels: str = "steps",
        value_discount: float = 0.98,
    ):
        self.steps = chunk * horizon
        states, actions, rewards, success, valid, starts, prompts, sources = [], [], [], [], [], [], [], []
        labelled, row_prompts, values = [], [], []
        offset = 0
        for i in indices:
            acts = episodes.read(i, "actions").astype(np.float32)  # no frames are read
            t_len, pad = len(acts), self.steps
            st = select_state(episodes.read(i, "state"), state_type).astype(np.float32)
            if features is not None:  # one row per frame, as the states
                st = np.concatenate([st, features[i].astype(np.float32)], axis=1)
            states.append(np.concatenate([st, np.repeat(st[-1:], pad, 0)]))
            actions.append(np.concatenate([acts, np.zeros((pad + 1, acts.shape[1]), np.float32)]))
            rewards.append(
                np.concatenate(
                    [episodes.read(i, "rewards").astype(np.float32), np.zeros(pad + 1, np.float32)]
                )
            )
            known = True
            if success_labels == "episode_end":
                outcome = episodes.entries[i].get("success_once")
                known = outcome is not None
                flags = np.zeros(t_len, np.float32)
                flags[-1] = float(bool(outcome))
            else:
                flags = episodes.read(i, "success").astype(np.float32)
            success.append(np.concatenate([flags, np.zeros(pad + 1, np.float32)]))
            # the value after action j: the outcome discounted over the actions left to the episode's end
            won = float(bool(episodes.entries[i].get("success_once"))) if known else 0.0
            to_end = np.arange(t_len - 1, -1, -1, dtype=np.float32)
            values.append(np.concatenate([won * value_discount**to_end, np.zeros(pad + 1, np.float32)]))
            valid.append(np.concatenate([np.ones(t_len, np.float32), np.zeros(pad + 1, np.float32)]))
            labelled.append(np.full(t_len + pad + 1, float(known), np.float32))
            starts += [offset + t for t in range(t_len)]
            prompts += [episodes.entries[i]["prompt"]] * t_len
            row_prompts += [episodes.entries[i]["prompt"]] * (t_len + 1 + pad)
            sources += [episodes.entries[i].get("merged_from")] * t_len
            offset += t_len + 1 + pad
        if not starts:
            raise ValueError("no windows: the selected episodes have no actions")
        self.states = torch.from_numpy(np.concatenate(states))  # [M, S], state j before action j
        self.actions = torch.from_numpy(np.concatenate(actions))
        self.rewards = torch.from_numpy(np.concatenate(rewards))  # reward of action j
        self.success = torch.from_numpy(np.concatenate(success))  # success after action j
        self.values = torch.from_numpy(np.concatenate(values).astype(np.float32))  # the value after action j
        self.valid = torch.from_numpy(np.concatenate(valid))
        self.labelled = torch.from_numpy(np.concatenate(labelled))  # 0: the episode's outcome is unknown
        self.starts = torch.tensor(starts)
        self.prompts = np.array(prompts, dtype=object)
        self.row_prompts = np.array(row_prompts, dtype=object)  # the prompt of each row of the flat arrays
        # each window's dataset before a merge (None: unmerged data)
        self.sources = np.array(sources, dtype=object)

    def __len__(self) -> int:
        return len(self.starts)

    def prompts_of_rows(self, rows: torch.Tensor) -> list[str]:
        """The prompts of rows of the flat arrays (``states``, ``success``, ...)."""
        return list(self.row_prompts[rows.numpy()])

    def windows_from(self, sources: list[str]) -> torch.Tensor:
        """The indices of the windows whose episodes were merged from one of ``sources``."""
        wanted = set(sources)
        return torch.from_numpy(np.flatnonzero([s in wanted for s in self.sources]))

    def batch(self, index: torch.Tensor) -> dict[str, torch.Tensor | list[str]]:
        """For windows ``index`` (any shape I): ``state`` [I, S] at the start, ``actions`` [I, H*C, A],
        ``next_states`` [I, H*C, S] after each action, ``reward``, ``success``, ``mask`` and ``labelled`` [I, H*C],
        ``prompt``."""
        first = self.starts[index]
        steps = first[..., None] + torch.arange(self.steps)
        return {
            "state": self.states[first],
            "actions": self.actions[steps],
            "next_states": self.states[steps + 1],
            "reward": self.rewards[steps],
            "success": self.success[steps],
            "value": self.values[steps],
            "mask": self.valid[steps],
            "labelled": self.labelled[steps],
            "prompt": list(self.prompts[index.reshape(-1).numpy()]),
        }

    def chunk_deltas(self, chunk: int) -> torch.Tensor:
        """State changes over one chunk from every window start whose chunk lies inside its episode."""
        first = self.starts
        inside = self.valid[first + chunk - 1] > 0
        return self.states[first[inside] + chunk] - self.states[first[inside]]
