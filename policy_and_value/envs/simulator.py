"""What the MuJoCo simulator envs (Meta-World, LIBERO) share: per-env episode counters, resets to numbered
start states, the chunk loop with its episode bookkeeping, frames rendered only at chunk ends for envs
whose episode goes on, and episode videos. A simulator supplies how to reset one env, step one env and
render some envs (``_reset_env``, ``_step_env``, ``_render``), or a batch at once (``_reset_envs``,
``_step_envs``)."""

from __future__ import annotations

import abc
import copy
from typing import Any

import numpy as np
import torch

from policy_and_value.config.schema import EnvConfig
from policy_and_value.envs.base import BatchedEnv, Observation, assign_tasks, time_left


class SimulatorEnv(BatchedEnv):
    """``num_envs`` simulator envs stepped one after another in this process (one core)."""

    cfg: EnvConfig
    prompts: list[str]
    task_ids: np.ndarray
    rng: np.random.Generator
    num_start_states: int  # start states an env can be reset to (reset_state_ids are taken modulo this)

    def _init_batch(self, cfg: EnvConfig, num_envs: int, seed: int, rank: int, action_dim: int) -> None:
        """The batch's config and sizes, its random stream, and each env's task (``assign_tasks``)."""
        self.cfg = cfg
        self.num_envs = num_envs
        self.chunk = cfg.num_action_chunks
        self.tasks = list(cfg.tasks)
        self.action_dim = action_dim
        self.rng = np.random.default_rng(seed)
        self.task_ids = assign_tasks(num_envs, len(self.tasks), rank, cfg.group_size, cfg.task_weights)

    def _init_episodes(self, raw_state_dim: int, rank: int, video_dir: str | None) -> None:
        """Counters of every env's episode, and the video writer when ``video_dir`` is given."""
        n = self.num_envs
        self._state = np.zeros((n, raw_state_dim))
        self._steps = np.zeros(n, dtype=np.int64)
        self._return = np.zeros(n)
        self._success = np.zeros(n, dtype=bool)
        self._dead = np.zeros(n, dtype=bool)
        self._layout_ids = np.zeros(n, dtype=np.int64)  # the start state each env was reset to
        self._frames: np.ndarray | None = None  # the last rendered frames of every env
        self._started = False
        self.video = None
        cfg = self.cfg
        if video_dir is not None and cfg.video_cfg.save_video and cfg.use_images:
            from policy_and_value.envs.video import EpisodeVideoWriter

            self.video = EpisodeVideoWriter(
                video_dir, cfg.video_cfg, min(n, cfg.video_cfg.max_envs), rank, cfg.max_episode_steps
            )

    # ------------------------------------------------------------------ what a simulator supplies
    @abc.abstractmethod
    def _render(self, ids: np.ndarray) -> np.ndarray:
        """uint8 [len(ids), V, H, W, 3] frames of the given envs."""

    def _reset_env(self, i: int, start: int) -> None:
        """Reset env ``i`` to start state ``start`` and write its state into ``self._state[i]`` (a simulator
        supplies this or ``_reset_envs``)."""
        raise NotImplementedError(f"{type(self).__name__} supplies neither _reset_env nor _reset_envs")

    def _step_env(self, i: int, action: np.ndarray) -> tuple[float, bool]:
        """One action in env ``i`` (its state into ``self._state[i]``); (the simulator's reward, success)
        (a simulator supplies this or ``_step_envs``)."""
        raise NotImplementedError(f"{type(self).__name__} supplies neither _step_env nor _step_envs")

    def _step_envs(self, ids: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One action in each env of ``ids`` (``actions [len(ids), A]``); (rewards, successes) arrays.
        One env after another here; a simulator that steps a batch at once overrides this."""
        out = [self._step_env(int(i), a) for i, a in zip(ids, actions, strict=True)]
        return np.array([r for r, _ in out], dtype=np.float64), np.array([s for _, s in out], dtype=bool)

    def _reset_envs(self, ids: np.ndarray, starts: np.ndarray) -> None:
        """Reset each env of ``ids`` to its start state (``_reset_env`` one after another by default)."""
        for i, start in zip(ids, starts, strict=True):
            self._reset_env(int(i), int(start))

    def _observed_state(self) -> np.ndarray:
        """The ``state`` observation of every env (``self._state`` unless the simulator selects from it)."""
        return self._state

    # ------------------------------------------------------------------ observation
    def _obs(self) -> Observation:
        """The batch observation; envs whose episode has ended (``auto_reset: false``) keep their last
        frames instead of being rendered again (nothing reads them, and rendering is the cost here)."""
        obs: Observation = {
            "state": torch.as_tensor(self._observed_state(), dtype=torch.float32),
            "prompt": list(self.prompts),
            "task_id": torch.as_tensor(self.task_ids, dtype=torch.int64),
            "time_left": time_left(self._steps, self.cfg.max_episode_steps),
        }
        if self.cfg.use_images:
            live = np.nonzero(~self._dead)[0]
            if self._frames is None or len(live) == self.num_envs:
                self._frames = self._render(np.arange(self.num_envs))
            elif len(live):
                self._frames = self._frames.copy()
                self._frames[live] = self._render(live)
            obs["images"] = torch.from_numpy(self._frames)
        return obs

    # ------------------------------------------------------------------ reset
    def _starts_for(self, ids: np.ndarray, reset_state_ids: torch.Tensor | None) -> np.ndarray:
        n = self.num_start_states
        if reset_state_ids is not None:
            return np.asarray(reset_state_ids, dtype=np.int64) % n
        if self.cfg.use_fixed_reset_state_ids:
            g = self.cfg.group_size
            group_draw = self.rng.integers(0, n, size=(self.num_envs + g - 1) // g)
            return np.repeat(group_draw, g)[ids]
        return self.rng.integers(0, n, size=len(ids))

    def _reset_ids(self, ids: np.ndarray, reset_state_ids: torch.Tensor | None = None) -> None:
        starts = self._starts_for(ids, reset_state_ids)
        self._reset_envs(ids, starts)
        self._layout_ids[ids] = starts
        self._steps[ids] = 0
        self._return[ids] = 0
        self._success[ids] = False
        self._dead[ids] = False

    def reset(self, env_ids: torch.Tensor | None = None, reset_state_ids: torch.Tensor | None = None):
        """Reset the given envs (all by default) to given or drawn start states; returns the batch obs."""
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        self._reset_ids(ids, reset_state_ids)
        self._started = True
        obs = self._obs()
        if self.video is not None:
            self.video.start(ids, obs["images"])
        return obs, {"reset_state_ids": torch.as_tensor(self._layout_ids)}

    # ------------------------------------------------------------------ step
    def chunk_step(self, actions: torch.Tensor):
        """Execute a chunk of actions per env; see ``BatchedEnv.chunk_step`` for the semantics.
        ``reward_signal: success`` gives 1 at the step an episode first succeeds (else the simulator's)."""
        if not self._started:
            self.reset()
        acts = np.clip(actions.detach().cpu().numpy().astype(np.float64), -1.0, 1.0)
        n, C = self.num_envs, acts.shape[1]
        rewards = np.zeros((n, C), dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        ended = self._dead.copy()
        recorded = self.video.recording if self.video is not None else ()
        for c in range(C):
            live = np.nonzero(~ended)[0]
            if not len(live):
                break
            r, succeeded = self._step_envs(live, acts[live, c])
            if self.cfg.reward_signal == "success":  # the outcome, once: the return is success_once
                r = (succeeded & ~self._success[live]).astype(np.float64)
            r = r * self.cfg.reward_scale
            rewards[live, c] = r
            self._return[live] += r
            self._steps[live] += 1
            self._success[live] |= succeeded
            ends = succeeded & (not self.cfg.ignore_terminations)
            terminated[live] = ends
            truncated[live] = ~ends & (self._steps[live] >= self.cfg.max_episode_steps)
            for j, i in enumerate(live):
                if i in recorded:
                    self.video.add(i, self._render(np.array([i]))[0], float(r[j]), bool(self._success[i]))
            ended |= terminated | truncated
        finished = (terminated | truncated) & ~self._dead
        obs_now = self._obs()
        info: dict[str, Any] = {}
        if finished.any():
            ids = np.nonzero(finished)[0]
            info["episode"] = {
                "env_ids": torch.as_tensor(ids),
                "success_once": torch.as_tensor(self._success[ids]),
                "return": torch.as_tensor(self._return[ids], dtype=torch.float32),
                "episode_len": torch.as_tensor(self._steps[ids]),
            }
            info["final_obs"] = obs_now
            if self.video is not None:
                self.video.finish(ids)
            if self.cfg.auto_reset:
                self._reset_ids(ids)
                obs_now = self._obs()
                if self.video is not None:
                    self.video.start(ids, obs_now["images"])
            else:
                self._dead |= finished
        return (
            obs_now,
            torch.as_tensor(rewards),
            torch.as_tensor(terminated),
            torch.as_tensor(truncated),
            info,
        )

    # ------------------------------------------------------------------ checkpoint
    COUNTERS = ("_state", "_steps", "_return", "_success", "_dead", "_layout_ids")

    def _sim_state(self) -> Any:
        """The simulators' own state, enough to continue every episode exactly; None where unsupported."""
        return None

    def _set_sim_state(self, sims: Any) -> None:
        """Restore what ``_sim_state`` returned."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore env state")

    def get_state(self) -> dict[str, Any] | None:
        """The simulators' state plus the episode counters, random stream and last frames (checkpoints);
        None when the simulator cannot give its state (episodes then restart on resume)."""
        sims = self._sim_state()
        if sims is None:
            return None
        return {
            "sims": sims,
            "rng": copy.deepcopy(self.rng.bit_generator.state),
            "arrays": {k: getattr(self, k).copy() for k in self.COUNTERS},
            "frames": None if self._frames is None else self._frames.copy(),
            "started": self._started,
        }

    def set_state(self, state: dict[str, Any] | None) -> None:
        """Restore what ``get_state`` returned."""
        if state is None:
            return
        self._set_sim_state(state["sims"] if "sims" in state else state["envs"])  # "envs": older checkpoints
        self.rng.bit_generator.state = state["rng"]
        for k, v in state["arrays"].items():
            setattr(self, k, v.copy())
        frames = state.get("frames")
        self._frames = None if frames is None else frames.copy()
        self._started = state["started"]

    def close(self) -> None:
        """Flush videos, then let the simulator release its renderers and envs (``_close_sim``)."""
        if self.video is not None:
            self.video.close()
        self._close_sim()

    def _close_sim(self) -> None:  # noqa: B027 - optional hook
        """Release renderers and envs."""
