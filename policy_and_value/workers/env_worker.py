"""Env worker: holds ``pipeline_stage_num`` batched envs (stages) and steps one stage per call.

Each stage is its own ``BatchedEnv`` so that one stage can step while the rollout worker infers the
next. The worker also accumulates finished-episode statistics for the runner's metrics.
"""

from __future__ import annotations

import os
import pickle
from collections import defaultdict
from typing import Any

import numpy as np
import torch

from policy_and_value.config.schema import EnvConfig, JobConfig
from policy_and_value.envs.base import BatchedEnv, EnvSpec
from policy_and_value.workers.base import Worker

EnvOutput = dict[str, Any]


def env_group_ids(train: EnvConfig, env: BatchedEnv) -> torch.Tensor | None:
    """Each of ``env``'s envs' env group (its index in ``train.groups``), or None without groups: the
    actor weighs (``loss_weight``) and normalises (``normalize_advantages_by``) chunks by it."""
    if not train.groups:
        return None
    return env.group_of_env.clone()


class EpisodeStats:
    """Finished episodes (per task) and reward sums since the last ``pop``."""

    def __init__(self) -> None:
        self.episodes: dict[str, list[float]] = defaultdict(list)
        self.reward_sum = 0.0
        self.reward_count = 0

    def add_step(self, rewards: torch.Tensor, alive: torch.Tensor) -> None:
        if alive.any():
            self.reward_sum += float(rewards.sum(-1)[alive].sum())
            self.reward_count += int(alive.sum())

    def add_episodes(
        self,
        info: dict,
        tasks: list[str],
        task_ids: torch.Tensor,
        keep: torch.Tensor,
        groups: list[str] | None = None,
    ) -> None:
        """Record finished episodes overall, per task and (for a mixed env) per env group."""
        ep = info.get("episode")
        if not ep:
            return
        for j, env_id in enumerate(ep["env_ids"].tolist()):
            if not bool(keep[env_id]):
                continue
            task = tasks[int(task_ids[env_id])]
            success = float(ep["success_once"][j])
            self.episodes["success_once"].append(success)
            self.episodes["return"].append(float(ep["return"][j]))
            self.episodes["episode_len"].append(float(ep["episode_len"][j]))
            self.episodes[f"{task}/success_once"].append(success)
            self.episodes[f"{task}/return"].append(float(ep["return"][j]))
            # imagined episodes: stopped by the members' disagreement (uncertainty_halt), and the reward heads'
            # spread per action (reward_mode state_reward)
            for key in ("halted", "reward_spread"):
                if key in ep:
                    self.episodes[key].append(float(ep[key][j]))
            if groups is not None and "group_id" in ep:
                group = groups[int(ep["group_id"][j])]
                self.episodes[f"{group}/success_once"].append(success)
                self.episodes[f"{group}/return"].append(float(ep["return"][j]))
                self.episodes[f"{group}/episode_len"].append(float(ep["episode_len"][j]))

    def pop(self) -> dict[str, Any]:
        out = {
            "episodes": dict(self.episodes),
            "reward_sum": self.reward_sum,
            "reward_count": self.reward_count,
        }
        self.__init__()
        return out


def prediction_video_dir(log_dir: str, split: str = "") -> str:
    """Where a job's world-model prediction videos go by default: ``<log_dir>/wm_pred/<split>``."""
    root = os.path.join(log_dir, "wm_pred")
    return os.path.join(root, split) if split else root


def _with_output_paths(cfg: EnvConfig, log_dir: str, split: str) -> EnvConfig:
    """World-model predictions go to ``prediction_video_dir`` unless ``dynamics_model_output_path`` is set."""
    if cfg.env_type != "world_model" or cfg.dynamics_model_output_path:
        return cfg
    return cfg.model_copy(update={"dynamics_model_output_path": prediction_video_dir(log_dir, split)})


class EnvWorker(Worker):
    """One env rank: ``num_envs / env_ranks`` train envs split into stages, plus its eval envs."""

    component = "env"

    def __init__(self, rank: int, world_size: int, num_cpus: float, cfg: JobConfig, log_dir: str):
        super().__init__(rank, world_size, num_cpus, cfg.runner.seed)
        import world_models.env  # noqa: F401 - registers env_type world_model with the env registry
        from policy_and_value.envs.registry import make_env
        from world_models.learned_reward import with_learned_reward

        self._make_env = make_env
        self._with_learned_reward = with_learned_reward
        self.cfg = cfg
        self.log_dir = log_dir
        self.stage_num = cfg.rollout.pipeline_stage_num
        train = _with_output_paths(cfg.env.train, log_dir, "train")
        per_stage = train.num_envs // world_size // self.stage_num
        base_seed = cfg.runner.seed * 1000 + rank * self.stage_num
        self.train_envs: list[BatchedEnv] = [
            self._make_train_env(train, per_stage, base_seed + s, rank * self.stage_num + s, world_size)
            for s in range(self.stage_num)
        ]
        self.group_ids = [env_group_ids(train, env) for env in self.train_envs]
        self.eval_envs: list[BatchedEnv] | None = None
        self.obs: list[dict | None] = [None] * self.stage_num
        self.alive: list[torch.Tensor | None] = [None] * self.stage_num
        self.stats = EpisodeStats()

    def _make_train_env(self, train: EnvConfig, n: int, seed: int, rank: int, world_size: int) -> BatchedEnv:
        """The env of one pipeline stage: ``n`` envs, or a ``MixedEnv`` of the groups' shares."""
        if not train.groups:
            return self._with_learned_reward(self._make_env(train, n, seed=seed, rank=rank), train)
        from policy_and_value.config.env_checks import env_groups
        from policy_and_value.envs.mixed import MixedEnv

        parts = [
            (name, self._with_learned_reward(self._make_env(
                _with_output_paths(group, self.log_dir, f"train/{name}"),
                group.num_envs // world_size // self.stage_num, seed=seed + 7 * g, rank=rank,
            ), group))
            for g, (name, group) in enumerate(env_groups(train))
        ]  # fmt: skip
        return MixedEnv(parts)

    # ------------------------------------------------------------------ queries
    def spec(self) -> EnvSpec:
        return self.train_envs[0].spec

    # ------------------------------------------------------------------ training rollouts
    def start_rollout(self) -> list[EnvOutput] | EnvOutput:
        """First output of every stage for a new rollout; resets envs unless episodes continue."""
        outs = []
        for s, env in enumerate(self.train_envs):
            if self.obs[s] is None or not self.cfg.env.train.auto_reset:
                obs, _ = self._timed(env.reset)
                self.obs[s] = obs
                self.alive[s] = torch.ones(env.num_envs, dtype=torch.bool)
            outs.append(self._grouped(s, self._output(self.obs[s], self.alive[s])))
        return outs if len(outs) > 1 else outs[0]

    def step(self, stage: int, actions: torch.Tensor) -> EnvOutput:
        """Step stage ``stage`` with an action chunk; returns obs, rewards and done flags."""
        env = self.train_envs[stage]
        alive = self.alive[stage]
        obs, rewards, terminated, truncated, info = self._timed(env.chunk_step, actions)
        if self.cfg.env.train.ignore_terminations:
            terminated = torch.zeros_like(terminated)
        rewards = rewards * alive.unsqueeze(-1)
        done = terminated | truncated
        self.stats.add_step(rewards, alive)
        self.stats.add_episodes(
            info, env.tasks, self.obs[stage]["task_id"], alive, getattr(env, "groups", None)
        )
        next_alive = alive.clone() if not self.cfg.env.train.auto_reset else torch.ones_like(alive)
        if not self.cfg.env.train.auto_reset:
            next_alive &= ~done
        self.obs[stage] = obs
        self.alive[stage] = next_alive
        out = self._output(
            obs, next_alive, rewards, terminated & alive, truncated & alive, info.get("final_obs")
        )
        return self._grouped(stage, out)

    def _grouped(self, stage: int, out: EnvOutput) -> EnvOutput:
        """``out`` with each env's env group, when the train env has groups."""
        if self.group_ids[stage] is not None:
            out["env_group"] = self.group_ids[stage]
        return out

    @staticmethod
    def _output(obs, alive, rewards=None, terminated=None, truncated=None, final_obs=None) -> EnvOutput:
        return {
            "obs": obs,
            "alive": alive,
            "rewards": rewards,
            "terminated": terminated,
            "truncated": truncated,
            "final_obs": final_obs,
        }

    def _timed(self, fn, *args):
        with self.busy():
            return fn(*args)

    def offload(self) -> None:
        """Let every env free accelerator memory (world-model envs move their models to CPU)."""
        for env in self.train_envs:
            env.offload()

    def onload(self) -> None:
        for env in self.train_envs:
            env.onload()

    def pop_stats(self) -> dict[str, Any]:
        """Episode statistics since the last call."""
        return self.stats.pop()

    # ------------------------------------------------------------------ evaluation
    def prepare_eval(self) -> None:
        """Build the eval envs (once); the runner asks for it at start-up, while the models load."""
        if self.eval_envs is not None:
            return
        ecfg: EnvConfig = _with_output_paths(self.cfg.env.eval, self.log_dir, "eval")
        n = ecfg.num_envs // self.world_size // self.stage_num
        video_dir = ecfg.video_cfg.video_base_dir or os.path.join(self.log_dir, "videos", "eval")
        self.eval_envs = [
            self._make_env(
                ecfg,
                n,
                seed=10_000_000 + self.cfg.runner.seed * 1000 + self.rank * self.stage_num + s,
                rank=self.rank * self.stage_num + s,
                video_dir=video_dir if (ecfg.video_cfg.save_video and self.rank == 0 and s == 0) else None,
            )
            for s in range(self.stage_num)
        ]

    def eval_reset(self, round_idx: int = 0) -> list[EnvOutput] | EnvOutput:
        """Reset the eval envs (created on first use) for round ``round_idx`` of episodes.

        Initial states depend only on the seed, the rank and the round, so every evaluation plays the
        same episodes (comparable across steps, and identical after a resume). Videos record the first
        round only: one episode per recorded env per evaluation (rendering them is most of its cost).
        """
        self.prepare_eval()
        for env in self.eval_envs:
            if getattr(env, "video", None) is not None:
                env.video.enabled = round_idx == 0
        self.eval_alive = []
        self.eval_obs = []
        self.eval_stats = EpisodeStats()
        outs = []
        for s, env in enumerate(self.eval_envs):
            rng = np.random.default_rng([self.cfg.runner.seed, self.rank, s, round_idx])
            ids = torch.as_tensor(rng.integers(0, 2**31 - 1, size=env.num_envs))
            obs, _ = env.reset(reset_state_ids=ids)
            alive = torch.ones(env.num_envs, dtype=torch.bool)
            self.eval_obs.append(obs)
            self.eval_alive.append(alive)
            outs.append(self._output(obs, alive))
        return outs if len(outs) > 1 else outs[0]

    def eval_step(self, stage: int, actions: torch.Tensor) -> EnvOutput:
        """Step an eval stage; each env plays exactly one episode per round."""
        env = self.eval_envs[stage]
        alive = self.eval_alive[stage]
        obs, rewards, terminated, truncated, info = env.chunk_step(actions)
        if self.cfg.env.eval.ignore_terminations:
            terminated = torch.zeros_like(terminated)
        rewards = rewards * alive.unsqueeze(-1)
        self.eval_stats.add_step(rewards, alive)
        self.eval_stats.add_episodes(info, env.tasks, self.eval_obs[stage]["task_id"], alive)
        self.eval_alive[stage] = alive & ~(terminated | truncated)
        self.eval_obs[stage] = obs
        return self._output(obs, self.eval_alive[stage])

    def eval_pop_stats(self) -> dict[str, Any]:
        return self.eval_stats.pop()

    def eval_pop_videos(self) -> list[tuple[str, bytes, int, int]]:
        """The eval episodes recorded since the last call as (name, GIF bytes, height, width): the driver
        logs them to TensorBoard without sharing a file system with this worker."""
        from policy_and_value.envs.video import gif_bytes

        videos = []
        for env in self.eval_envs or []:
            writer = getattr(env, "video", None)
            for path in writer.pop_written() if writer is not None and hasattr(writer, "pop_written") else []:
                name = os.path.splitext(os.path.basename(path))[0]
                videos.append((name, *gif_bytes(path, self.cfg.env.eval.video_cfg.fps)))
        return videos

    # ------------------------------------------------------------------ checkpoint
    def get_state(self) -> bytes:
        """Env states, current obs and RNGs, pickled (restored by ``set_state`` for exact resume)."""
        state = {
            "envs": [env.get_state() for env in self.train_envs],
            "obs": self.obs,
            "alive": self.alive,
            "rng": self.get_rng_state(),
        }
        return pickle.dumps(state)

    def set_state(self, blob: bytes) -> None:
        state = pickle.loads(blob)  # noqa: S301 - our own checkpoint file
        for env, s in zip(self.train_envs, state["envs"], strict=True):
            env.set_state(s)
        self.obs = state["obs"]
        self.alive = state["alive"]
        self.set_rng_state(state["rng"])

    def close(self) -> None:
        for env in self.train_envs + (self.eval_envs or []):
            env.close()


def merge_stats(stats: list[dict[str, Any]]) -> dict[str, float]:
    """Means over all env workers' finished episodes: {"success_once": .., "<task>/success_once": ..}, and the
    env steps they took (``episode_steps``, and ``<group>/episode_steps`` per env group of a mixed env)."""
    merged: dict[str, list[float]] = defaultdict(list)
    reward_sum = sum(s["reward_sum"] for s in stats)
    reward_count = sum(s["reward_count"] for s in stats)
    for s in stats:
        for k, v in s["episodes"].items():
            merged[k].extend(v)
    out = {k: float(np.mean(v)) for k, v in merged.items() if v}
    out["num_episodes"] = float(len(merged.get("return", [])))
    for k, v in merged.items():  # env steps of the finished episodes, overall and per env group
        if k == "episode_len" or k.endswith("/episode_len"):
            out[k.removesuffix("episode_len") + "episode_steps"] = float(sum(v))
    out.setdefault("episode_steps", 0.0)
    if reward_count:
        out["reward"] = reward_sum / reward_count
    return out
