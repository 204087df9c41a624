"""Any installed gymnasium env with vector observations, batched with gymnasium's SyncVectorEnv.

Used to check the RL stack against published results (CartPole, Pendulum). Observations carry only
``state``; discrete action spaces take the choice index as a float action of dimension 1.
"""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from policy_and_value.config.schema import EnvConfig
from policy_and_value.envs.base import BatchedEnv, EnvSpec, Observation


class GymEnv(BatchedEnv):
    """``num_envs`` copies of ``cfg.tasks[0]`` with chunked stepping, auto-reset and episode stats."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int):
        env_id = cfg.tasks[0]
        if env_id not in gym.registry:
            raise ValueError(f"env.tasks={cfg.tasks}: {env_id!r} is not a registered gymnasium id")
        self.cfg = cfg
        self.num_envs = num_envs
        self.chunk = cfg.num_action_chunks
        self.tasks = [env_id]
        self.vec = gym.vector.SyncVectorEnv(
            [lambda: gym.make(env_id, max_episode_steps=cfg.max_episode_steps) for _ in range(num_envs)],
            autoreset_mode=gym.vector.AutoresetMode.DISABLED,
        )
        space = self.vec.single_action_space
        obs_dim = int(np.prod(self.vec.single_observation_space.shape))
        if isinstance(space, gym.spaces.Discrete):
            self.action_dim, discrete, low, high = 1, int(space.n), None, None
        elif isinstance(space, gym.spaces.Box):
            self.action_dim, discrete = int(np.prod(space.shape)), None
            low, high = tuple(space.low.reshape(-1).tolist()), tuple(space.high.reshape(-1).tolist())
        else:
            raise ValueError(f"env.tasks={cfg.tasks}: action space {space} is neither Discrete nor Box")
        self._discrete = discrete
        self.spec = EnvSpec(
            self.action_dim, self.chunk, obs_dim, None, tuple(self.tasks), discrete, low, high
        )
        self.rng = np.random.default_rng(seed)
        self._first_seed = seed
        self._obs = np.zeros((num_envs, obs_dim), dtype=np.float32)
        self._return = np.zeros(num_envs)
        self._length = np.zeros(num_envs, dtype=np.int64)
        self._dead = np.zeros(num_envs, dtype=bool)  # finished, waiting for reset() (no auto_reset)
        self._started = False

    # ------------------------------------------------------------------ helpers
    def _pack(self, obs: np.ndarray) -> Observation:
        return {
            "state": torch.as_tensor(obs, dtype=torch.float32).reshape(self.num_envs, -1),
            "prompt": [self.tasks[0]] * self.num_envs,
            "task_id": torch.zeros(self.num_envs, dtype=torch.int64),
        }

    def _seeds_for(self, mask: np.ndarray, reset_state_ids: torch.Tensor | None) -> list[int | None]:
        """Per-env reset seeds: given ids, shared ids per group, or fresh draws from this env's RNG."""
        if reset_state_ids is not None:
            ids = reset_state_ids.tolist()
        elif self.cfg.use_fixed_reset_state_ids:
            groups = self.rng.integers(0, 2**31 - 1, size=self.num_envs // self.cfg.group_size)
            ids = np.repeat(groups, self.cfg.group_size).tolist()
        else:
            ids = self.rng.integers(0, 2**31 - 1, size=self.num_envs).tolist()
        return [int(i) if m else None for i, m in zip(ids, mask, strict=True)]

    def _reset_mask(self, mask: np.ndarray, reset_state_ids: torch.Tensor | None = None) -> np.ndarray:
        obs, _ = self.vec.reset(seed=self._seeds_for(mask, reset_state_ids), options={"reset_mask": mask})
        self._return[mask] = 0
        self._length[mask] = 0
        return obs

    # ------------------------------------------------------------------ contract
    def reset(self, env_ids: torch.Tensor | None = None, reset_state_ids: torch.Tensor | None = None):
        """Reset the given envs (all by default); returns the whole batch's observation."""
        mask = np.zeros(self.num_envs, dtype=bool)
        mask[env_ids.numpy() if env_ids is not None else slice(None)] = True
        if reset_state_ids is not None and env_ids is not None:
            full = torch.zeros(self.num_envs, dtype=torch.int64)
            full[env_ids] = reset_state_ids
            reset_state_ids = full
        obs = self._reset_mask(mask, reset_state_ids)
        self._obs[mask] = obs[mask]
        self._dead[mask] = False
        self._started = True
        return self._pack(self._obs), {}

    def chunk_step(self, actions: torch.Tensor):
        """Step C actions; an env whose episode ends mid-chunk collects nothing more this chunk."""
        if not self._started:
            self.reset()
        n, C = self.num_envs, actions.shape[1]
        acts = actions.detach().cpu().numpy()
        rewards = np.zeros((n, C), dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        final = self._obs.copy()
        ended = self._dead.copy()  # dead envs count as already ended: no reward, no new episode
        ep_return = np.zeros(n)
        ep_length = np.zeros(n, dtype=np.int64)
        for c in range(C):
            a = acts[:, c]
            a = (
                a[:, 0].round().astype(np.int64)
                if self._discrete
                else np.clip(a, self.spec.action_low, self.spec.action_high)
            )
            obs, r, te, tr, _ = self.vec.step(a)
            live = ~ended
            rewards[live, c] = r[live] * self.cfg.reward_scale
            self._return[live] += r[live]
            self._length[live] += 1
            just = live & (te | tr)
            terminated |= just & te
            truncated |= just & tr & ~te
            final[just] = obs[just]
            ep_return[just] = self._return[just]
            ep_length[just] = self._length[just]
            self._obs[live] = obs[live]
            ended |= just
            if (just | self._dead).any() and c < C - 1:
                # keep finished sims valid for the rest of the chunk; they restart properly below
                self._reset_mask(just | self._dead)
        finished = ended & ~self._dead
        info: dict[str, Any] = {}
        if finished.any():
            ids = np.nonzero(finished)[0]
            info["episode"] = {
                "env_ids": torch.as_tensor(ids),
                "success_once": torch.zeros(len(ids), dtype=torch.bool),
                "return": torch.as_tensor(ep_return[ids], dtype=torch.float32),
                "episode_len": torch.as_tensor(ep_length[ids]),
            }
            info["final_obs"] = self._pack(final)
        if ended.any():
            obs = self._reset_mask(ended)
            if self.cfg.auto_reset:
                self._obs[ended] = obs[ended]
            else:
                self._dead |= ended
        return (
            self._pack(self._obs),
            torch.as_tensor(rewards),
            torch.as_tensor(terminated),
            torch.as_tensor(truncated),
            info,
        )

    # ------------------------------------------------------------------ checkpoint
    def get_state(self) -> bytes:
        """The python envs (classic-control envs pickle exactly), RNG and episode counters."""
        return pickle.dumps(
            {
                "envs": self.vec.envs,
                "rng": self.rng.bit_generator.state,
                "obs": self._obs,
                "return": self._return,
                "length": self._length,
                "started": self._started,
                "dead": self._dead,
            }
        )

    def set_state(self, state: Any) -> None:
        s = pickle.loads(state)  # noqa: S301 - our own checkpoint
        self.vec.envs = s["envs"]
        self.rng.bit_generator.state = s["rng"]
        self._obs, self._return, self._length, self._started = (
            s["obs"],
            s["return"],
            s["length"],
            s["started"],
        )
        self._dead = s["dead"]

    def close(self) -> None:
        self.vec.close()
