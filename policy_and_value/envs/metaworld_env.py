"""Meta-World (MuJoCo) tasks as a batched, image-observing env with action chunks.

Each env is a Meta-World task env whose goal/object layout is one of the task's 50 "train tasks"
(the reset state id) of the MT1 benchmark built with ``layout_seed``: another seed gives 50 other
layouts, so evaluation can run on layouts training never saw. Frames come from one ``mujoco.Renderer``
per task (shared by its envs) with fast settings (no multisampling, shadows or reflections) and are
rendered only when an observation is returned (end of a chunk) and only for envs whose episode goes on,
except for envs being recorded to video. Corner-camera frames are rotated upright.

``state`` is Meta-World's 39-dim observation (hand xyz, gripper opening, object poses, the previous
frame's values, goal) with ``state_type: full``, or the 4-dim proprioception (hand xyz, gripper)
with ``state_type: proprio``. ``terminated`` is success unless ``ignore_terminations``; ``truncated``
is reaching ``max_episode_steps``. Rewards are Meta-World's dense shaping (``reward_signal: dense``)
or the outcome (``success``: 1 at the step the episode first succeeds).
"""

from __future__ import annotations

import copy
import functools
import os
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

import metaworld  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from policy_and_value.config.schema import EnvConfig  # noqa: E402
from policy_and_value.envs.base import BatchedEnv, EnvSpec, Observation, assign_tasks  # noqa: E402
from policy_and_value.envs.metaworld_tasks import (  # noqa: E402
    FULL_STATE_DIM,
    MT50_TASKS,
    PROMPTS,
    PROPRIO_DIM,
    select_state,
)

NUM_RESET_STATES = 50
# Meta-World's corner cameras are rolled 180 degrees in its model file: rotate their frames back
# (a rotation, not a vertical flip, which would mirror the scene).
ROTATED_CAMERAS = frozenset({"corner", "corner2", "corner3", "corner4"})
# Meta-World tasks move bodies and sites (objects, goals) in the *model* at reset: snapshot those too.
_MODEL_FIELDS = ("body_pos", "body_quat", "site_pos", "site_quat", "eq_data", "eq_type")
_SNAPSHOT_SKIP = {"model", "data", "mujoco_renderer"}  # the observation bounds (used to clip obs) are kept


@functools.lru_cache(maxsize=64)
def _benchmark(task: str, benchmark_seed: int) -> Any:
    """Meta-World's MT1 benchmark of ``task`` (its 50 layouts); building one takes about a second, so
    envs of the same task share it."""
    return metaworld.MT1(task, seed=benchmark_seed)


def _make_task_env(task: str, benchmark_seed: int) -> tuple[Any, list]:
    """One Meta-World env of ``task`` plus its list of train-task layouts."""
    mt1 = _benchmark(task, benchmark_seed)
    env = mt1.train_classes[task]()
    return env, list(mt1.train_tasks)


class MetaWorldEnv(BatchedEnv):
    """``num_envs`` Meta-World envs over ``cfg.tasks`` (round-robin over env groups: ``assign_tasks``)."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, rank: int = 0, video_dir: str | None = None):
        for t in cfg.tasks:
            if t not in MT50_TASKS:
                raise ValueError(f"env.tasks: {t!r} is not a Meta-World MT50 task")
        self.cfg = cfg
        self.num_envs = num_envs
        self.chunk = cfg.num_action_chunks
        self.tasks = list(cfg.tasks)
        self.action_dim = 4
        self.rng = np.random.default_rng(seed)
        self.task_ids = assign_tasks(num_envs, len(self.tasks), rank, cfg.group_size, cfg.task_weights)
        self.envs, self.layouts = [], []
        for i in range(num_envs):
            env, layouts = _make_task_env(self.tasks[self.task_ids[i]], benchmark_seed=cfg.layout_seed)
            env.max_path_length = max(env.max_path_length, cfg.max_episode_steps + self.chunk)
            self.envs.append(env)
            self.layouts.append(layouts)
        self.prompts = [PROMPTS[self.tasks[t]] for t in self.task_ids]
        # One renderer per task, shared by its envs: a renderer's context holds the task's meshes and
        # textures (about 150 MB each on a software GL), and poses come from each env's own data.
        self.renderers: list[mujoco.Renderer] = []
        if cfg.use_images:
            per_task: dict[int, mujoco.Renderer] = {}
            for env, task_id in zip(self.envs, self.task_ids, strict=True):
                if task_id not in per_task:
                    env.model.vis.quality.offsamples = 0
                    r = mujoco.Renderer(env.model, cfg.image_size, cfg.image_size)
                    r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
                    r.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
                    per_task[task_id] = r
                self.renderers.append(per_task[task_id])
        state_dim = FULL_STATE_DIM if cfg.state_type == "full" else PROPRIO_DIM
        image_shape = (len(cfg.cameras), cfg.image_size, cfg.image_size) if cfg.use_images else None
        self.spec = EnvSpec(
            4, self.chunk, state_dim, image_shape, tuple(self.tasks), None, (-1.0,) * 4, (1.0,) * 4
        )
        self._state = np.zeros((num_envs, 39))
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._return = np.zeros(num_envs)
        self._success = np.zeros(num_envs, dtype=bool)
        self._dead = np.zeros(num_envs, dtype=bool)
        self._layout_ids = np.zeros(num_envs, dtype=np.int64)
        self._frames: np.ndarray | None = None  # the last rendered frames of every env
        self._started = False
        self.video = None
        if video_dir is not None and cfg.video_cfg.save_video and cfg.use_images:
            from policy_and_value.envs.video import EpisodeVideoWriter

            self.video = EpisodeVideoWriter(
                video_dir, cfg.video_cfg, min(num_envs, cfg.video_cfg.max_envs), rank, cfg.max_episode_steps
            )

    # ------------------------------------------------------------------ observation
    def _render(self, ids: np.ndarray) -> np.ndarray:
        """uint8 [len(ids), V, H, W, 3] for the given envs."""
        out = np.empty(
            (len(ids), len(self.cfg.cameras), self.cfg.image_size, self.cfg.image_size, 3), dtype=np.uint8
        )
        for j, i in enumerate(ids):
            r = self.renderers[i]
            for v, cam in enumerate(self.cfg.cameras):
                r.update_scene(self.envs[i].data, camera=cam)
                frame = r.render()
                out[j, v] = frame[::-1, ::-1] if cam in ROTATED_CAMERAS else frame
        return out

    def _obs(self) -> Observation:
        """The batch observation; envs whose episode has ended (``auto_reset: false``) keep their last
        frames instead of being rendered again (nothing reads them, and rendering is the cost here)."""
        state = select_state(self._state, self.cfg.state_type)
        obs: Observation = {
            "state": torch.as_tensor(state, dtype=torch.float32),
            "prompt": list(self.prompts),
            "task_id": torch.as_tensor(self.task_ids, dtype=torch.int64),
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
    def _layouts_for(self, ids: np.ndarray, reset_state_ids: torch.Tensor | None) -> np.ndarray:
        if reset_state_ids is not None:
            return np.asarray(reset_state_ids, dtype=np.int64) % NUM_RESET_STATES
        if self.cfg.use_fixed_reset_state_ids:
            g = self.cfg.group_size
            group_draw = self.rng.integers(0, NUM_RESET_STATES, size=(self.num_envs + g - 1) // g)
            return np.repeat(group_draw, g)[ids]
        return self.rng.integers(0, NUM_RESET_STATES, size=len(ids))

    def _reset_ids(self, ids: np.ndarray, reset_state_ids: torch.Tensor | None = None) -> None:
        layouts = self._layouts_for(ids, reset_state_ids)
        for i, layout in zip(ids, layouts, strict=True):
            env = self.envs[i]
            env.set_task(self.layouts[i][int(layout)])
            env._partially_observable = (
                False  # goal in the state vector, as in MT10 (scripted experts read it)
            )
            obs, _ = env.reset()
            self._state[i] = obs
            self._layout_ids[i] = layout
        self._steps[ids] = 0
        self._return[ids] = 0
        self._success[ids] = False
        self._dead[ids] = False

    def reset(self, env_ids: torch.Tensor | None = None, reset_state_ids: torch.Tensor | None = None):
        """Reset the given envs (all by default) to given or drawn layouts; returns the batch obs."""
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        self._reset_ids(ids, reset_state_ids)
        self._started = True
        obs = self._obs()
        if self.video is not None:
            self.video.start(ids, obs["images"])
        return obs, {"reset_state_ids": torch.as_tensor(self._layout_ids)}

    # ------------------------------------------------------------------ step
    def chunk_step(self, actions: torch.Tensor):
        """Execute a chunk of actions per env; see ``BatchedEnv.chunk_step`` for the semantics."""
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
            for i in np.nonzero(~ended)[0]:
                obs, r, _, _, info = self.envs[i].step(acts[i, c])
                self._state[i] = obs
                succeeded = bool(info["success"])
                if self.cfg.reward_signal == "success":  # the outcome, once: the return is success_once
                    r = float(succeeded and not self._success[i])
                r = float(r) * self.cfg.reward_scale
                rewards[i, c] = r
                self._return[i] += r
                self._steps[i] += 1
                self._success[i] |= succeeded
                if succeeded and not self.cfg.ignore_terminations:
                    terminated[i] = True
                elif self._steps[i] >= self.cfg.max_episode_steps:
                    truncated[i] = True
                if i in recorded:
                    self.video.add(i, self._render(np.array([i]))[0], r, bool(self._success[i]))
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
    def get_state(self) -> dict[str, Any]:
        """MuJoCo integration state and the plain Python attributes of every env, plus counters."""
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        envs = []
        for env in self.envs:
            phys = np.empty(mujoco.mj_stateSize(env.model, spec))
            mujoco.mj_getState(env.model, env.data, phys, spec)
            attrs = {k: copy.deepcopy(v) for k, v in env.__dict__.items() if k not in _SNAPSHOT_SKIP}
            model = {f: getattr(env.model, f).copy() for f in _MODEL_FIELDS}
            envs.append({"physics": phys, "attrs": attrs, "model": model})
        return {
            "envs": envs,
            "rng": copy.deepcopy(self.rng.bit_generator.state),
            "arrays": {
                k: getattr(self, k).copy()
                for k in ("_state", "_steps", "_return", "_success", "_dead", "_layout_ids")
            },
            "frames": None if self._frames is None else self._frames.copy(),
            "started": self._started,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        for env, s in zip(self.envs, state["envs"], strict=True):
            env.__dict__.update(copy.deepcopy(s["attrs"]))
            for f, v in s["model"].items():
                getattr(env.model, f)[...] = v
            mujoco.mj_setState(env.model, env.data, s["physics"], spec)
            mujoco.mj_forward(
                env.model, env.data
            )  # derived quantities (site/body poses) for obs and rendering
            mujoco.mj_setState(
                env.model, env.data, s["physics"], spec
            )  # forward rewrote the solver warm-start
        self.rng.bit_generator.state = state["rng"]
        for k, v in state["arrays"].items():
            setattr(self, k, v.copy())
        frames = state.get("frames")
        self._frames = None if frames is None else frames.copy()
        self._started = state["started"]

    def close(self) -> None:
        if self.video is not None:
            self.video.close()
        for r in {id(r): r for r in self.renderers}.values():
            r.close()
        self.renderers = []
        for env in self.envs:
            env.close()
