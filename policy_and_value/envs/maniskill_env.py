"""ManiSkill3 tabletop tasks (SAPIEN) as a batched, image-observing env with action chunks.

Built on ``mani-skill`` (``make install-maniskill``: the package, and on a machine without a Vulkan driver
Mesa's software one, lavapipe, unpacked into the venv; nothing is downloaded at run time). ``env.tasks``
names ManiSkill ids (``PickCube-v1``, ``PushCube-v1``, ``StackCube-v1``). ``env.sim_backend: cpu`` runs
one ManiSkill env per env here (its CPU simulation holds one scene); ``gpu`` runs each task's envs as one
GPU-simulated ManiSkill env (many scenes in one process) where CUDA exists.

A reset seeds an env with ``layout_seed * 1000 + reset state id``, so ``use_fixed_reset_state_ids`` groups
share a layout and another ``layout_seed`` gives layouts never trained on (on the GPU simulation ManiSkill
draws a batch's layouts from one seed, so ids name batches there, not single layouts).

Observations: the ``base_camera`` frame, rendered only at the end of a chunk (and every step for envs
recorded to video) instead of ManiSkill's per-step sensor observations; ``state`` is 8 numbers as
LIBERO's: TCP position, its orientation as axis-angle and the two gripper finger positions. Actions are
ManiSkill's ``pd_ee_delta_pose`` (7: translation and rotation deltas of the end effector, gripper +1 open
/ -1 close), in [-1, 1]. Rewards: success (1 at the step an episode first succeeds) or ManiSkill's
normalised dense reward (``reward_signal: dense``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from policy_and_value.config.schema import EnvConfig
from policy_and_value.envs.base import EnvSpec
from policy_and_value.envs.maniskill_tasks import (
    ACTION_DIM,
    NUM_RESET_STATES,
    STATE_DIM,
    TASKS,
    missing_requirement,
    use_vulkan_driver,
)
from policy_and_value.envs.simulator import SimulatorEnv


def _detach(tree: Any) -> Any:
    """A copy of a ManiSkill state dict on the CPU (tensors cloned), for a checkpoint."""
    if isinstance(tree, dict):
        return {k: _detach(v) for k, v in tree.items()}
    return tree.detach().clone().cpu() if isinstance(tree, torch.Tensor) else tree


def _to_device(tree: Any, device: torch.device) -> Any:
    if isinstance(tree, dict):
        return {k: _to_device(v, device) for k, v in tree.items()}
    return tree.to(device) if isinstance(tree, torch.Tensor) else tree


# the objects and targets scripted experts read, by the attribute names ManiSkill's tasks give them
PRIVILEGED = ("cube", "obj", "cubeA", "cubeB", "goal_site", "goal_region")


def axis_angle(quat_wxyz: torch.Tensor) -> torch.Tensor:
    """Axis-angle [N, 3] of unit quaternions [N, 4] in SAPIEN's (w, x, y, z) order (angle in [0, pi])."""
    q = torch.where(quat_wxyz[:, :1] < 0, -quat_wxyz, quat_wxyz)
    xyz = q[:, 1:]
    norm = xyz.norm(dim=1, keepdim=True)
    angle = 2.0 * torch.atan2(norm, q[:, :1])
    return torch.where(norm > 1e-8, xyz / norm.clamp_min(1e-8) * angle, torch.zeros_like(xyz))


class ManiSkillEnv(SimulatorEnv):
    """``num_envs`` ManiSkill envs over ``cfg.tasks`` (tasks round-robin over env groups)."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, rank: int = 0, video_dir: str | None = None):
        problem = missing_requirement()
        if problem is not None:
            raise ImportError(f"env_type maniskill {problem}")
        for t in cfg.tasks:
            if t not in TASKS:
                raise ValueError(f"env.tasks: {t!r} is not one of {', '.join(TASKS)}")
        use_vulkan_driver()
        import gymnasium as gym
        import mani_skill.envs  # noqa: F401 - registers the tasks

        self._init_batch(cfg, num_envs, seed, rank, ACTION_DIM)
        gpu = cfg.sim_backend == "gpu"
        # the ManiSkill envs ("sims") and which of our envs each holds: one each on the CPU, a task's all on the GPU
        if gpu:
            members = [np.nonzero(self.task_ids == t)[0] for t in np.unique(self.task_ids)]
        else:
            members = [np.array([i]) for i in range(num_envs)]
        self.sims, self.members = [], members
        self._sim_of = np.zeros(num_envs, dtype=np.int64)
        self._slot = np.zeros(num_envs, dtype=np.int64)
        for k, ids in enumerate(members):
            self._sim_of[ids], self._slot[ids] = k, np.arange(len(ids))
            env = gym.make(
                self.tasks[self.task_ids[ids[0]]], num_envs=len(ids), obs_mode="none",
                control_mode="pd_ee_delta_pose", sim_backend="physx_cuda" if gpu else "physx_cpu",
                render_backend=("cuda" if gpu else "cpu") if cfg.use_images else "none",
                reward_mode="normalized_dense" if cfg.reward_signal == "dense" else "none",
                sensor_configs={"width": cfg.image_size, "height": cfg.image_size},
                max_episode_steps=10**9,  # episode limits are ours (max_episode_steps)
            )  # fmt: skip
            self.sims.append(env.unwrapped)
        self.prompts = [TASKS[self.tasks[t]][0] for t in self.task_ids]
        self._last_grip = np.ones(num_envs)  # envs stepped only because their batch steps hold their grip
        image_shape = (len(cfg.cameras), cfg.image_size, cfg.image_size) if cfg.use_images else None
        self.spec = EnvSpec(
            ACTION_DIM, self.chunk, STATE_DIM, image_shape, tuple(self.tasks), None,
            (-1.0,) * ACTION_DIM, (1.0,) * ACTION_DIM,
        )  # fmt: skip
        self.num_start_states = NUM_RESET_STATES
        self._init_episodes(STATE_DIM, rank, video_dir)

    # ------------------------------------------------------------------ observation
    def _render(self, ids: np.ndarray) -> np.ndarray:
        """uint8 [len(ids), V, H, W, 3]: each ManiSkill env holding some of ``ids`` renders its cameras once."""
        size = self.cfg.image_size
        out = np.empty((len(ids), len(self.cfg.cameras), size, size, 3), dtype=np.uint8)
        for k in np.unique(self._sim_of[ids]):
            sim = self.sims[k]
            sim.scene.update_render(update_sensors=True, update_human_render_cameras=False)
            rows = np.nonzero(self._sim_of[ids] == k)[0]
            for v, cam in enumerate(self.cfg.cameras):
                sensor = sim.scene.sensors[cam]
                sensor.capture()
                rgb = sensor.get_obs(rgb=True, depth=False, position=False, segmentation=False)["rgb"]
                out[rows, v] = rgb[torch.as_tensor(self._slot[ids[rows]])].cpu().numpy()
        return out

    def _read_state(self, k: int) -> None:
        """The 8-number state of every env ManiSkill env ``k`` holds."""
        agent = self.sims[k].agent
        pose = agent.tcp.pose
        state = torch.cat([pose.p, axis_angle(pose.q), agent.robot.get_qpos()[:, -2:]], dim=1)
        self._state[self.members[k]] = state.double().cpu().numpy()

    def privileged_obs(self, i: int) -> dict[str, np.ndarray]:
        """Env ``i``'s TCP, object and target positions (the task's names): for scripted experts only."""
        sim, j = self.sims[self._sim_of[i]], self._slot[i]
        out = {"tcp_pos": sim.agent.tcp.pose.p[j].cpu().numpy()}
        for name in PRIVILEGED:
            if hasattr(sim, name):
                out[name] = getattr(sim, name).pose.p[j].cpu().numpy()
        return out

    # ------------------------------------------------------------------ reset and step
    def _reset_envs(self, ids: np.ndarray, starts: np.ndarray) -> None:
        seeds = self.cfg.layout_seed * NUM_RESET_STATES + np.asarray(starts, dtype=np.int64)
        for k in np.unique(self._sim_of[ids]):
            mine = self._sim_of[ids] == k
            slots = self._slot[ids[mine]]
            sim = self.sims[k]
            if sim.num_envs == 1:
                sim.reset(seed=int(seeds[mine][0]))
            else:  # GPU: a partial reset; ManiSkill seeds the batch
                episode_seeds = np.array(sim._episode_seed, dtype=np.int64).reshape(-1)
                episode_seeds = np.resize(episode_seeds, sim.num_envs)
                episode_seeds[slots] = seeds[mine]
                sim.reset(seed=episode_seeds.tolist(), options={"env_idx": torch.as_tensor(slots)})
            self._read_state(int(k))
        self._last_grip[ids] = 1.0

    def _step_envs(self, ids: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One action in each env of ``ids``: each ManiSkill env holding some steps all its scenes at once
        (the others hold still, their gripper as last commanded)."""
        rewards, success = np.zeros(len(ids)), np.zeros(len(ids), dtype=bool)
        self._last_grip[ids] = actions[:, 6]
        for k in np.unique(self._sim_of[ids]):
            sim, members = self.sims[k], self.members[k]
            rows = np.nonzero(self._sim_of[ids] == k)[0]
            batch = np.zeros((len(members), ACTION_DIM), dtype=np.float32)
            batch[:, 6] = self._last_grip[members]
            batch[self._slot[ids[rows]]] = actions[rows]
            _, reward, _, _, info = sim.step(torch.as_tensor(batch, device=sim.device))
            slots = torch.as_tensor(self._slot[ids[rows]])
            rewards[rows] = reward.reshape(-1)[slots].cpu().numpy()  # zeros with reward_mode "none"
            success[rows] = info["success"].reshape(-1)[slots].cpu().numpy()
            self._read_state(int(k))
        return rewards, success

    # ------------------------------------------------------------------ checkpoint
    def _sim_state(self) -> list[dict[str, Any]]:
        """Every ManiSkill env's simulation state (poses and velocities of the robot, objects and goal
        markers; joint positions) and the grips held."""
        return [
            {
                "sims": [_detach(sim.get_state_dict()) for sim in self.sims],
                "last_grip": self._last_grip.copy(),
            }
        ]

    def _set_sim_state(self, sims: list[dict[str, Any]]) -> None:
        for k, (sim, saved) in enumerate(zip(self.sims, sims[0]["sims"], strict=True)):
            sim.set_state_dict(_to_device(saved, sim.device))
            self._read_state(k)
        self._last_grip = sims[0]["last_grip"].copy()

    def _close_sim(self) -> None:
        for sim in self.sims:
            sim.close()
        self.sims = []
