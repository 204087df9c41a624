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

from policy_and_value.config.schema import EnvConfig  # noqa: E402
from policy_and_value.envs.base import EnvSpec  # noqa: E402
from policy_and_value.envs.metaworld_tasks import (  # noqa: E402
    FULL_STATE_DIM,
    MT50_TASKS,
    PROMPTS,
    PROPRIO_DIM,
    select_state,
)
from policy_and_value.envs.simulator import SimulatorEnv  # noqa: E402

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


class MetaWorldEnv(SimulatorEnv):
    """``num_envs`` Meta-World envs over ``cfg.tasks`` (round-robin over env groups: ``assign_tasks``)."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, rank: int = 0, video_dir: str | None = None):
        for t in cfg.tasks:
            if t not in MT50_TASKS:
                raise ValueError(f"env.tasks: {t!r} is not a Meta-World MT50 task")
        self._init_batch(cfg, num_envs, seed, rank, action_dim=4)
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
        self.num_start_states = NUM_RESET_STATES
        self._init_episodes(39, rank, video_dir)

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

    def _observed_state(self) -> np.ndarray:
        return select_state(self._state, self.cfg.state_type)

    # ------------------------------------------------------------------ reset and step
    def _reset_env(self, i: int, start: int) -> None:
        env = self.envs[i]
        env.set_task(self.layouts[i][start])
        env._partially_observable = False  # goal in the state vector, as in MT10 (scripted experts read it)
        obs, _ = env.reset()
        self._state[i] = obs

    def _step_env(self, i: int, action: np.ndarray) -> tuple[float, bool]:
        obs, r, _, _, info = self.envs[i].step(action)
        self._state[i] = obs
        return float(r), bool(info["success"])

    # ------------------------------------------------------------------ checkpoint
    def _sim_state(self) -> list[dict[str, Any]]:
        """MuJoCo integration state, the task's model fields and the plain Python attributes of every env."""
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        envs = []
        for env in self.envs:
            phys = np.empty(mujoco.mj_stateSize(env.model, spec))
            mujoco.mj_getState(env.model, env.data, phys, spec)
            attrs = {k: copy.deepcopy(v) for k, v in env.__dict__.items() if k not in _SNAPSHOT_SKIP}
            model = {f: getattr(env.model, f).copy() for f in _MODEL_FIELDS}
            envs.append({"physics": phys, "attrs": attrs, "model": model})
        return envs

    def _set_sim_state(self, sims: list[dict[str, Any]]) -> None:
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        for env, s in zip(self.envs, sims, strict=True):
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

    def _close_sim(self) -> None:
        for r in {id(r): r for r in self.renderers}.values():
            r.close()
        self.renderers = []
        for env in self.envs:
            env.close()
