"""Scripted experts for ManiSkill3's cube tasks (PickCube-v1, PushCube-v1, StackCube-v1), acting from the
simulator's privileged state (TCP, cube and target positions, ``ManiSkillEnv.privileged_obs``) with the
env's 7-dim ``pd_ee_delta_pose`` actions (an action of 1 moves 10 cm; gripper +1 open, -1 close). Each is a
list of waypoints walked in order. Success per task is measured in docs/results.md
(``python -m toolkits.collect_episodes --suite maniskill``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

GAIN = 8.0  # per metre: a 1 cm error asks 8% of the 10 cm an action of 1 moves
NEAR = 0.01  # a waypoint is reached within 1 cm
PHASE_LIMIT = 40  # steps before a phase gives up and moves on
GRIP_STEPS = 6  # steps to close or open the gripper
OPEN, CLOSED = 1.0, -1.0
HALF = 0.02  # the cubes' half size in these tasks

# a waypoint: (where the TCP goes, from the privileged state and the TCP position at the phase's start;
# the gripper command; whether the phase is a fixed number of steps instead of reaching a point)
Waypoint = tuple[Callable[[dict[str, np.ndarray], np.ndarray], np.ndarray], float, bool]


def _pick_cube() -> list[Waypoint]:
    return [
        (lambda p, s: p["cube"] + [0, 0, 0.08], OPEN, False),  # above the cube
        (lambda p, s: p["cube"], OPEN, False),  # around it
        (lambda p, s: s, CLOSED, True),  # grasp
        (lambda p, s: p["goal_site"], CLOSED, False),  # carry it to the goal and hold still there
    ]


def _push_cube() -> list[Waypoint]:
    behind = np.array([-(HALF + 0.03), 0, 0])
    return [
        (lambda p, s: p["obj"] + behind + [0, 0, 0.06], CLOSED, False),  # above, behind the cube
        (lambda p, s: p["obj"] + behind + [0, 0, 0.0], CLOSED, False),  # down to the table
        (lambda p, s: p["goal_region"] * [1, 1, 0] + [-(HALF + 0.01), 0, p["obj"][2]], CLOSED, False),  # push
    ]


def _stack_cube() -> list[Waypoint]:
    return [
        (lambda p, s: p["cubeA"] + [0, 0, 0.08], OPEN, False),  # above the red cube
        (lambda p, s: p["cubeA"], OPEN, False),  # around it
        (lambda p, s: s, CLOSED, True),  # grasp
        (lambda p, s: s + [0, 0, 0.08], CLOSED, False),  # lift
        (lambda p, s: p["cubeB"] + [0, 0, 2 * HALF + 0.05], CLOSED, False),  # above the green cube
        (lambda p, s: p["cubeB"] + [0, 0, 2 * HALF + 0.005], CLOSED, False),  # onto it
        (lambda p, s: s, OPEN, True),  # release
        (lambda p, s: s + [0, 0, 0.05], OPEN, False),  # back off and stay
    ]


PLANS = {"PickCube-v1": _pick_cube, "PushCube-v1": _push_cube, "StackCube-v1": _stack_cube}


class ManiSkillCubePolicy:
    """Stateful: ``reset()`` at the start of each episode, then ``get_action(privileged)`` every step."""

    def __init__(self, task: str):
        if task not in PLANS:
            raise ValueError(f"no scripted ManiSkill expert for {task!r}; there are: {', '.join(PLANS)}")
        self.plan = PLANS[task]()
        self.reset()

    def reset(self) -> None:
        self.phase, self.steps, self.start = 0, 0, None

    def get_action(self, privileged: dict[str, np.ndarray]) -> np.ndarray:
        tcp = np.asarray(privileged["tcp_pos"], dtype=np.float64)
        if self.start is None:
            self.start = tcp
        where, grip, timed = self.plan[self.phase]
        delta = where(privileged, self.start) - tcp
        action = np.zeros(7)
        action[:3] = np.clip(delta * GAIN, -1.0, 1.0)
        action[6] = grip
        self.steps += 1
        last = self.phase == len(self.plan) - 1
        done = self.steps >= GRIP_STEPS if timed else np.linalg.norm(delta) < NEAR
        if not last and (done or self.steps > PHASE_LIMIT):
            self.phase, self.steps, self.start = self.phase + 1, 0, None
        return action
