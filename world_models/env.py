"""The world-model env (``env_type: world_model``): a dynamics model imagines the frames of each action
chunk and a reward model scores them, behind the same batched env contract as the real simulators.

Reset: each env takes an episode of its task from ``dynamics_model_image_root`` (a random one, or the
one given by ``reset_state_ids``) and starts from its first frame (``episode_start``) or from a random
frame along it (``keyframe``: keyframe-initialised rollouts); the ``T_h`` frames up to there are the
history. ``chunk_step`` imagines the chunk's frames for all envs in one batched call (one transformer
forward per denoising step), scores them, and turns the scores into rewards: ``chunk_reward`` puts the
last frame's score on the chunk's last action; otherwise ``reward_mode`` gives per-frame rewards placed
on the action that ends each frame (``success``: 1 on the first frame over the threshold, the outcome
alone; ``state_reward``: the state model's reward head on the state after every action, the
simulator's shaped reward in imagination). An episode terminates when the score reaches ``success_threshold`` (unless
``ignore_terminations``) and is truncated after ``max_episode_steps`` actions.

With a state model (``state_model_config``) the state the policy sees is its members' mean after each
chunk; ``outcome_source: state`` scores progress by its success classifier instead of the reward model,
``frames_from: state`` / ``state_residual`` draws the frames from its renderer instead of the denoiser,
and the members' disagreement lowers rewards (``uncertainty_penalty``) or ends episodes
(``uncertainty_halt``); with ``reward_mode: state_reward`` the spread of the members' reward heads can lower
each reward too (``reward_uncertainty_penalty``: mean - penalty x std, a pessimistic reward). An observation model
(``latent_components``: its state is the proprioception and the frames' latent components) starts from the start
frame's encoding and the recorded proprioception; the policy sees the proprioception it predicts and the frames it
decodes.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from policy_and_value.config.schema import EnvConfig
from policy_and_value.envs.base import BatchedEnv, EnvSpec, Observation, assign_tasks, time_left
from policy_and_value.envs.registry import register_env
from world_models.dynamics_config import frame_offsets
from world_models.imagined_rewards import ImaginedRewards
from world_models.reset_episodes import load_reset_episodes
from world_models.state_scoring import StateScoring


class WorldModelEnv(ImaginedRewards, StateScoring, BatchedEnv):
    """``num_envs`` imagined environments over ``cfg.tasks`` (round-robin over env groups: ``assign_tasks``)."""

    def __init__(
        self,
        cfg: EnvConfig,
        num_envs: int,
        seed: int,
        rank: int = 0,
        video_dir: str | None = None,
        dynamics: Any = None,
        scorer: Any = None,
    ):
        from reward_models.modeling import FrameScorer
        from world_models.dynamics_model import DynamicsModel

        self.cfg = cfg
        self.num_envs = num_envs
        self.rank = rank
        # the models run on the accelerator Ray gave this env worker, if any
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.dynamics = (
            dynamics if dynamics is not None else DynamicsModel.from_pretrained(cfg.dynamics_model_config)
        )
        if cfg.dynamics_model_dtype is not None:
            self.dynamics.to(getattr(torch, cfg.dynamics_model_dtype))
        self.dynamics.eval().to(self.device)
        if scorer is None and cfg.reward_model_config is not None:  # (outcome_source=state needs none)
            scorer = FrameScorer.from_pretrained(cfg.reward_model_config)
            if cfg.reward_model_ckpt:
                from safetensors.torch import load_file

                scorer.load_state_dict(load_file(cfg.reward_model_ckpt), strict=True)
        self.scorer = scorer.eval().to(self.device) if scorer is not None else None
        dcfg = self.dynamics.cfg
        self.history_frames, self.future_frames = dcfg.history_frames, dcfg.future_frames
        self.offsets = frame_offsets(dcfg.action_chunk, dcfg.future_frames)  # actions before each frame
        if cfg.num_action_chunks != dcfg.action_chunk:
            raise ValueError(
                f"env.num_action_chunks={cfg.num_action_chunks}: the dynamics model imagines chunks of "
                f"{dcfg.action_chunk} actions"
            )
        self.chunk = cfg.num_action_chunks
        self.action_dim = dcfg.action_dim
        self.tasks = list(cfg.tasks)
        self.task_ids = assign_tasks(num_envs, len(self.tasks), rank, cfg.group_size, cfg.task_weights)
        # episodes to reset from, per task, held in memory (frames of the model's views)
        self._episodes = load_reset_episodes(cfg.dynamics_model_image_root, self.tasks, cfg.state_type)
        first = self._episodes[0][0]
        _, views, height, width, _ = first["images"].shape
        if views != dcfg.num_views:
            raise ValueError(f"the reset episodes have {views} views, the dynamics model {dcfg.num_views}")
        self.state_dim = first["state"].shape[1]
        self.spec = EnvSpec(
            action_dim=self.action_dim, num_action_chunks=self.chunk, state_dim=self.state_dim,
            image_shape=(views, height, width), tasks=tuple(self.tasks), action_low=(-1.0,) * self.action_dim,
            action_high=(1.0,) * self.action_dim,
        )  # fmt: skip
        self.prompts = [self._episodes[t][0]["prompt"] for t in self.task_ids]
        self.state_model = self._load_state_model()
        self._rng = np.random.default_rng(seed + 7919 * rank)
        self._gen = torch.Generator().manual_seed(seed + 7919 * rank)
        # deterministic imagination: every env and chunk starts denoising from this one noise draw, so the
        # imagined future is a function of (history, state, actions) alone
        self._fixed_noise = torch.randn(
            (1, *self.dynamics.noise_shape()), generator=torch.Generator().manual_seed(seed)
        )
        self._history = np.zeros((num_envs, self.history_frames, views, height, width, 3), np.uint8)
        self._state = np.zeros((num_envs, self.state_dim), np.float32)
        members = self.state_model.cfg.ensemble_size if self.state_model is not None else 0
        model_dim = self.state_model.cfg.state_dim if self.state_model is not None else self.state_dim
        self._members = np.zeros((members, num_envs, model_dim), np.float32)  # each member's state
        self._progress = np.zeros(num_envs, np.float32)
        self._potential = np.zeros(
            num_envs, np.float32
        )  # reward_mode value: the value of each env's current state
        # state_residual: the start frame's VAE latents minus the rendered start state's, per env [N, V, C, h, w]
        latent = tuple(self.dynamics.noise_shape()[1:]) if cfg.frames_from == "state_residual" else (0,)
        self._start_offset = np.zeros((num_envs, *latent), np.float32)
        self._steps = np.zeros(num_envs, np.int64)
        self._return = np.zeros(num_envs, np.float32)
        self._reward_spread = np.zeros(num_envs, np.float32)  # sum over the episode of the heads' spread
        self._success = np.zeros(num_envs, bool)
        self._episode_ids = np.zeros(num_envs, np.int64)
        self._frame = np.zeros(num_envs, np.int64)  # index in the reset episode of the current frame
        self._replaying = np.zeros(num_envs, bool)  # every chunk so far repeated the episode's own actions
        self.video = None
        if cfg.visualize_wm_pred:
            from world_models.visualize import PredictionVideoWriter

            out = cfg.dynamics_model_output_path or os.path.join("logs", "wm_pred")
            # like the simulators' videos: the first video_cfg.max_envs envs of this worker
            self.video = PredictionVideoWriter(out, min(num_envs, cfg.video_cfg.max_envs), rank=rank)

    def _load_state_model(self) -> Any:
        """The state model of ``state_model_config`` (None without one), checked against the env."""
        if self.cfg.state_model_config is None:
            return None
        from world_models.state_model import StateModel

        model = StateModel.from_pretrained(self.cfg.state_model_config, device=self.device)
        if model.proprio_dim != self.state_dim or model.cfg.action_dim != self.action_dim:
            raise ValueError(
                f"env.state_model_config={self.cfg.state_model_config}: states of {model.proprio_dim} and "
                f"actions of {model.cfg.action_dim}; the env has {self.state_dim} and {self.action_dim}"
            )
        if model.cfg.latent_components and (
            self.cfg.frames_from == "dynamics" or self.cfg.outcome_source != "state"
        ):
            raise ValueError(
                f"env.state_model_config={self.cfg.state_model_config} is an observation model: it draws the frames "
                f"and scores them (set env.frames_from: state_residual and env.outcome_source: state; got "
                f"{self.cfg.frames_from}, {self.cfg.outcome_source})"
            )
        self._tasks_one_hot = model.task_one_hot(self.prompts)  # an unknown task is an error here
        if self.cfg.frames_from != "dynamics" and model.cfg.latent_shape != list(
            self.dynamics.noise_shape()[1:]
        ):
            raise ValueError(
                f"env.state_model_config={self.cfg.state_model_config}: its renderer makes latents "
                f"{model.cfg.latent_shape}; the dynamics model's VAE {list(self.dynamics.noise_shape()[1:])}"
            )
        return model

    @torch.no_grad()
    def _render_latents(self, states: torch.Tensor, ids: np.ndarray | None = None) -> torch.Tensor:
        """The renderer's VAE latents [N, T, V, C, h, w] of states [N, T, S] (of envs ``ids``, default all);
        with ``state_residual`` shifted by each env's start offset."""
        n, t, _ = states.shape
        index = torch.arange(self.num_envs) if ids is None else torch.as_tensor(ids)
        tasks = self._tasks_one_hot[index].repeat_interleave(t, 0)
        latents = self.state_model.render_latents(states.reshape(n * t, -1).to(self.device), tasks)
        latents = latents.reshape(n, t, *latents.shape[1:])
        if self.cfg.frames_from == "state_residual":
            latents = latents + torch.from_numpy(self._start_offset[index.numpy()])[:, None].to(self.device)
        return latents

    @torch.no_grad()
    def render_states(self, states: torch.Tensor, ids: np.ndarray | None = None) -> torch.Tensor:
        """Frames uint8 [N, T, V, S, S, 3] of states [N, T, S] as imagination draws them (``frames_from``): the
        renderer's latents (with each env's start residual), the VAE's decoder."""
        n, t, _ = states.shape
        return (
            self.dynamics.decode(self._render_latents(states, ids).flatten(0, 1)[:, None])
            .reshape(n, t, *self.spec.image_shape, 3)
            .cpu()
        )

    @torch.no_grad()
    def observed_states(self, obs: dict[str, Any]) -> torch.Tensor:
        """The state model's state [N, S] of observations (e.g. a simulator's): their ``state``, and for an
        observation model the encoding of their frames after it."""
        if not self.state_model.cfg.latent_components:
            return obs["state"].float()
        latents = self.dynamics.encode(obs["images"][:, None].to(self.device))[:, 0]
        return self.state_model.observe(obs["state"].to(self.device), latents).cpu()

    @torch.no_grad()
    def _reobserved(self, members: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        """Members' states [K, N, S] with their code replaced by the observation model's code of the frames
        uint8 [N, V, H, W, 3] they were drawn as (``observed_states``); each member keeps its own proprioception."""
        p = self.state_model.proprio_dim
        codes = self.observed_states({"images": frames, "state": members[0, :, :p]})[:, p:]
        return torch.cat([members[..., :p], codes[None].expand(len(members), -1, -1)], dim=-1)

    def _observe_start(self, ids: np.ndarray, latents: torch.Tensor | None) -> None:
        """Each member's start state of envs ``ids`` from their recorded state and, for an observation model, the
        VAE latents [N, V, C, h, w] of their last history frame."""
        if self.state_model is None:
            return
        state = torch.from_numpy(self._state[ids])
        if self.state_model.cfg.latent_components:
            state = self.state_model.observe(state.to(self.device), latents.to(self.device)).cpu()
        self._members[:, ids] = state.numpy()[None]

    # ------------------------------------------------------------------ contract
    @torch.no_grad()
    def reset(
        self, env_ids: torch.Tensor | None = None, reset_state_ids: torch.Tensor | None = None
    ) -> tuple[Observation, dict]:
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids).reshape(-1)
        draws = self._start_draws(ids, reset_state_ids)
        for i, (e, start) in zip(ids, draws, strict=True):
            ep = self._episodes[int(self.task_ids[i])][e]
            frames = [max(0, start - self.history_frames + 1 + j) for j in range(self.history_frames)]
            self._history[i] = ep["images"][frames]
            self._state[i] = ep["state"][start]
            self._episode_ids[i] = e
            self._frame[i] = start
            self._replaying[i] = True
        return self._begin(ids)

    @torch.no_grad()
    def reset_to(self, images: torch.Tensor, states: torch.Tensor) -> tuple[Observation, dict]:
        """Start every env from given observations instead of a recorded episode: uint8 frames [N, V, H, W, 3]
        (each the whole history) and states [N, S] of ``state_type``, e.g. a real simulator's after its reset, to
        imagine what follows a real start (the policy's plans, for data on imagination's own rollouts).
        ``info['reset_state_ids']`` is -1 (no recorded episode)."""
        n, want = self.num_envs, (self.num_envs, *self.spec.image_shape, 3)
        if tuple(images.shape) != want or tuple(states.shape) != (n, self.state_dim):
            raise ValueError(
                f"reset_to: frames {tuple(images.shape)} and states {tuple(states.shape)}; this env takes "
                f"{want} and {(n, self.state_dim)}"
            )
        self._history[:] = images.numpy()[:, None]
        self._state[:] = states.numpy()
        self._episode_ids[:] = -1
        self._frame[:] = 0
        self._replaying[:] = False
        return self._begin(np.arange(n))

    def _begin(self, ids: np.ndarray) -> tuple[Observation, dict]:
        """Start the episodes of envs ``ids`` from the history and state just set: the members' states, counters,
        the start residual, the start score, the video."""
        observes = self.state_model is not None and self.state_model.cfg.latent_components
        start = None  # the start frames' VAE latents, encoded once for the members and the residual
        if observes or self.cfg.frames_from == "state_residual":
            start = self.dynamics.encode(torch.from_numpy(self._history[ids, -1:]))[:, 0].cpu()
        self._observe_start(ids, start)
        if self.cfg.frames_from == "state_residual":
            self._start_offset[ids] = 0.0
            rendered = self._render_latents(torch.from_numpy(self._members[0, ids])[:, None], ids)[:, 0].cpu()
            self._start_offset[ids] = (start - rendered).numpy()
        self._steps[ids] = 0
        self._return[ids] = 0.0
        self._reward_spread[ids] = 0.0
        self._success[ids] = False
        if self.cfg.reward_mode == "value":
            self._potential[ids] = self._values_of_states(torch.from_numpy(self._members))[ids].numpy()
        if self.cfg.outcome_source == "state":
            self._progress[ids] = self._scores_of_states(torch.from_numpy(self._members))[ids].numpy()
        else:
            current = torch.from_numpy(self._history[ids, -1:])
            self._progress[ids] = (
                self.scorer.score(current, [self.prompts[i] for i in ids])[:, 0].cpu().numpy()
            )
        if self.video is not None:
            for i in ids:
                self.video.start(int(i), self._history[i, -1], float(self._progress[i]))
        info = {
            "reset_state_ids": torch.as_tensor(self._episode_ids.copy()),
            "scores": torch.from_numpy(self._progress.copy()),
        }
        return self._obs(), info

    def _start_draws(self, ids: np.ndarray, reset_state_ids: torch.Tensor | None) -> list[tuple[int, int]]:
        """(reset episode, start frame) of each env in ``ids``: given episodes or random ones; with
        ``use_fixed_reset_state_ids`` the ``group_size`` envs of a group share one draw (GRPO compares
        their action samples from one imagined start)."""
        g = self.cfg.group_size if self.cfg.use_fixed_reset_state_ids and reset_state_ids is None else 1
        given = None if reset_state_ids is None else np.asarray(reset_state_ids).reshape(-1)
        keyframe = self.cfg.reset_mode == "keyframe"
        per_group: dict[int, tuple[int, int]] = {}
        for k, i in enumerate(ids):
            group = int(i) // g
            if group not in per_group:
                eps = self._episodes[int(self.task_ids[i])]
                e = int(given[k]) % len(eps) if given is not None else int(self._rng.integers(len(eps)))
                last = len(eps[e]["images"]) - 1
                per_group[group] = (e, int(self._rng.integers(0, max(1, last))) if keyframe else 0)
        return [per_group[int(i) // g] for i in ids]

    @torch.no_grad()
    def _imagine_chunk(
        self, actions: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """What follows ``actions`` [N, C, A]: (every state-model member's states after each action [K, N, C, S] or
        None, the members' disagreement at the chunk's end [N], the imagined frames [N, T_f, V, H, W, 3] uint8, the
        next state the policy sees or None)."""
        n = self.num_envs
        path, uncertainty = None, torch.zeros(n)
        if self.state_model is not None:
            path = self.state_model.rollout_chunk(
                torch.from_numpy(self._members).to(self.device), actions.to(self.device), self._tasks_one_hot
            ).cpu()  # [K, N, C, S]: every member's states after each action
            uncertainty = self.state_model.disagreement(path[:, :, -1].to(self.device)).cpu()
        if self.cfg.frames_from != "dynamics":  # the frames the imagined states show, via the VAE's decoder
            next_state = path[:, :, -1].mean(0)
            if self.video is None and self.cfg.outcome_source == "state":
                # only the chunk's last frame is seen (by the policy): render it alone, in every slot
                last = self.render_states(next_state[:, None])
                images = last.expand(n, self.future_frames, *last.shape[2:]).contiguous()
            else:
                images = self.render_states(path[:, :, [o - 1 for o in self.offsets]].mean(0))
        else:
            out = self.dynamics.imagine(
                torch.from_numpy(self._history), torch.from_numpy(self._state), actions, self.prompts,
                generator=self._gen, num_inference_steps=self.cfg.num_inference_steps,
                noise=None if self.cfg.stochastic_imagination else self._fixed_noise,
            )  # fmt: skip
            images = out["images"].cpu()  # [N, T_f, V, H, W, 3] uint8
            next_state = out.get("state") if path is None else path[:, :, -1].mean(0)
        return path, uncertainty, images, next_state

    @torch.no_grad()
    def chunk_step(
        self, actions: torch.Tensor
    ) -> tuple[Observation, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """Imagine the chunk for every env, score its frames, reward its actions, end the episodes it ends."""
        n, c = self.num_envs, self.chunk
        actions = actions.reshape(n, c, self.action_dim).float().clamp(-1, 1)
        real = self._track_replay(actions)
        path, uncertainty, images, next_state = self._imagine_chunk(actions)
        if self.cfg.reobserve_frames:  # the members go on from the code of the frame they show
            path[:, :, -1] = self._reobserved(path[:, :, -1], images[:, -1])
        if path is not None:
            self._members = path[:, :, -1].numpy().astype(np.float32)
        if self.cfg.outcome_source == "state":
            scores = self._scores_of_states(path[:, :, [o - 1 for o in self.offsets]])  # [N, T_f]
        else:
            scores = self.scorer.score(images, self.prompts).cpu()  # [N, T_f]
        progress = torch.cat([torch.from_numpy(self._progress)[:, None], scores], dim=1)
        reached = scores >= self.cfg.success_threshold  # termination at the first frame over the threshold
        first_hit = torch.where(
            reached.any(1), reached.float().argmax(1), torch.full((n,), self.future_frames)
        )
        mode = "chunk_reward" if self.cfg.chunk_reward else self.cfg.reward_mode
        rewards, spread = self._chunk_rewards(path, progress, first_hit, mode)
        rewards[:, -1] -= (
            self.cfg.uncertainty_penalty * uncertainty
        )  # MOPO: distrust what the members dispute
        rewards = rewards * self.cfg.reward_scale  # as the simulators scale theirs
        success_now = reached.any(1).numpy()
        self._success |= success_now
        self._steps += c
        self._return += rewards.sum(1).numpy()
        self._reward_spread += (spread * self.cfg.reward_scale).sum(1).numpy()
        terminated = torch.from_numpy(success_now & (not self.cfg.ignore_terminations))
        halted = (
            uncertainty > self.cfg.uncertainty_halt
            if self.cfg.uncertainty_halt is not None
            else torch.zeros(n, dtype=torch.bool)
        )  # the members disagree too much to trust the rest of this episode: stop it (MOReL's halt)
        truncated = (torch.from_numpy(self._steps >= self.cfg.max_episode_steps) | halted) & ~terminated
        imgs = images.numpy()
        self._history = np.concatenate([self._history, imgs], axis=1)[:, -self.history_frames :]
        self._progress = scores[:, -1].numpy().astype(np.float32)
        if next_state is not None:  # what the policy sees of it (an observation model's: the proprioception)
            self._state = next_state[:, : self.state_dim].cpu().numpy().astype(np.float32)
        if self.video is not None:
            for i in range(n):
                for j in range(self.future_frames):
                    real_ij = None if real[i] is None else real[i][j]
                    self.video.add(i, imgs[i, j], float(scores[i, j]), real_ij)
        info: dict[str, Any] = {"scores": scores, "uncertainty": uncertainty, "halted": halted}
        done = (terminated | truncated).numpy()
        if done.any():
            ids = np.nonzero(done)[0]
            info["episode"] = {
                "env_ids": torch.as_tensor(ids),
                "success_once": torch.as_tensor(self._success[ids]),
                "return": torch.as_tensor(self._return[ids]),
                "episode_len": torch.as_tensor(self._steps[ids]),
                "halted": halted[ids].float(),
            }
            if mode == "state_reward":  # the heads' spread per action, in the reward's units
                info["episode"]["reward_spread"] = torch.as_tensor(
                    (self._reward_spread[ids] / self._steps[ids]).astype(np.float32)
                )
            if self.video is not None:
                for i in ids:
                    self.video.finish(int(i))
            if self.cfg.auto_reset:
                info["final_obs"] = self._obs()
                self.reset(torch.as_tensor(ids))
        return self._obs(), rewards, terminated, truncated, info

    def recorded_actions(self) -> torch.Tensor:
        """The next chunk of each env's reset episode's own actions [N, C, A] (zeros past its end): stepping
        with them replays the episode, and ``visualize_wm_pred`` then shows the real frames beside."""
        out = np.zeros((self.num_envs, self.chunk, self.action_dim), np.float32)
        for i in range(self.num_envs):
            part = self._episode(i)["actions"][self._frame[i] : self._frame[i] + self.chunk]
            out[i, : len(part)] = part
        return torch.from_numpy(out)

    def _episode(self, i: int) -> dict[str, Any]:
        """The recorded episode env ``i`` was reset from."""
        return self._episodes[int(self.task_ids[i])][int(self._episode_ids[i])]

    def _track_replay(self, actions: torch.Tensor) -> list[np.ndarray | None] | None:
        """Update which envs still replay their episode; when videos are written, the real frames of this
        chunk per env (None where it does not replay). Only prediction videos use this."""
        if self.video is None:
            self._frame += self.chunk
            return None
        recorded = self.recorded_actions()
        real: list[np.ndarray | None] = []
        for i in range(self.num_envs):
            images = self._episode(i)["images"]
            inside = self._frame[i] + self.chunk < len(images)
            same = bool(torch.allclose(actions[i], recorded[i].clamp(-1, 1), atol=1e-5))
            self._replaying[i] &= inside and same
            real.append(images[[self._frame[i] + o for o in self.offsets]] if self._replaying[i] else None)
        self._frame += self.chunk
        return real

    def _obs(self) -> Observation:
        return {
            "images": torch.from_numpy(self._history[:, -1].copy()),
            "state": torch.from_numpy(self._state.copy()),
            "prompt": list(self.prompts),
            "task_id": torch.as_tensor(self.task_ids, dtype=torch.long),
            "time_left": time_left(self._steps, self.cfg.max_episode_steps),
        }

    def get_state(self) -> dict[str, Any]:
        """History frames, states, counters and random streams: a resumed run imagines the same futures."""
        return {
            "history": self._history.copy(), "state": self._state.copy(), "members": self._members.copy(),
            "start_offset": self._start_offset.copy(),
            "progress": self._progress.copy(), "potential": self._potential.copy(),
            "steps": self._steps.copy(), "return": self._return.copy(), "success": self._success.copy(),
            "reward_spread": self._reward_spread.copy(),
            "episode_ids": self._episode_ids.copy(), "frame": self._frame.copy(),
            "replaying": self._replaying.copy(), "rng": self._rng.bit_generator.state, "gen": self._gen.get_state(),
        }  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self._history, self._state = state["history"].copy(), state["state"].copy()
        self._members = state.get("members", self._members).copy()  # runs saved before the state model
        self._start_offset = state.get("start_offset", self._start_offset).copy()
        self._progress, self._steps = state["progress"].copy(), state["steps"].copy()
        self._potential = state.get(
            "potential", self._potential
        ).copy()  # runs saved before reward_mode value
        self._return, self._success = state["return"].copy(), state["success"].copy()
        self._reward_spread = state.get("reward_spread", self._reward_spread).copy()  # runs saved before it
        self._episode_ids = state["episode_ids"].copy()
        self._frame, self._replaying = state["frame"].copy(), state["replaying"].copy()
        self._rng.bit_generator.state = state["rng"]
        self._gen.set_state(state["gen"])

    def offload(self) -> None:
        """Move the models off the accelerator between rollouts (``env.enable_offload``)."""
        self.dynamics.to("cpu")
        if self.scorer is not None:
            self.scorer.to("cpu")

    def onload(self) -> None:
        self.dynamics.to(self.device)
        if self.scorer is not None:
            self.scorer.to(self.device)

    def close(self) -> None:
        if self.video is not None:
            for i in range(self.num_envs):
                self.video.finish(i)


register_env(
    "world_model", WorldModelEnv
)  # env_type world_model: make_env builds it once this module is imported
