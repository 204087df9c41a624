"""A scripted expert for LIBERO-Object ("pick up the X and place it in the basket"), acting from the
simulator's privileged state (object, basket and end-effector positions) with LIBERO's 7-dim
end-effector-delta actions: above the object, down, grasp, up to a carrying height, over the basket,
release. Success per task is measured in experiments/reports/baselines.md (``worldrl collect --suite libero_object``)."""

from __future__ import annotations

import numpy as np

CARRY_Z = 0.30  # carrying height above the floor (metres, world frame)
GAIN = 2.0 / 0.05  # OSC_POSE maps an action of 1 to 5 cm: close half the distance per step, capped
NEAR = 0.01  # a waypoint is reached within 1 cm
ALIGN = 0.003  # ... and the point above the object only once within 3 mm sideways (the fingers straddle a thin neck)
# grasp height above an object's origin (its base), where the default 1 cm would meet a shoulder first:
# the salad dressing bottle is held by its cap (the shoulder at 11 cm stops the open fingers)
GRASP_HEIGHT = {"salad_dressing": 0.045}
PHASE_LIMIT = 60  # steps before a phase gives up and moves on
GRASP_STEPS = 12


class LiberoPickPlacePolicy:
    """Stateful: ``reset()`` at the start of each episode, then ``get_action(raw_obs)`` every step."""

    def __init__(self, obj: str, target: str = "basket_1"):
        self.obj, self.target = obj, target
        self.grasp_z = next((dz for name, dz in GRASP_HEIGHT.items() if obj.startswith(name)), 0.01)
        self.reset()

    def reset(self) -> None:
        self.phase, self.steps = 0, 0

    def get_action(self, raw: dict[str, np.ndarray]) -> np.ndarray:
        eef = np.asarray(raw["robot0_eef_pos"])
        obj = np.asarray(raw[f"{self.obj}_pos"])
        target = np.asarray(raw[f"{self.target}_pos"])
        waypoints = {
            0: (obj + [0, 0, 0.12], -1.0),  # above the object, open
            1: (obj + [0, 0, self.grasp_z], -1.0),  # down to it
            2: (eef, 1.0),  # close the gripper
            3: (np.array([eef[0], eef[1], CARRY_Z]), 1.0),  # lift
            4: (np.array([target[0], target[1], CARRY_Z]), 1.0),  # over the basket
            5: (eef, -1.0),  # release
        }
        goal, grip = waypoints[self.phase]
        delta = goal - eef
        action = np.zeros(7)
        action[:3] = np.clip(delta * GAIN, -1.0, 1.0)
        action[6] = grip
        self.steps += 1
        reached = self.phase in (0, 1, 3, 4) and np.linalg.norm(delta) < NEAR
        if self.phase == 0:
            reached = reached and np.linalg.norm(delta[:2]) < ALIGN
        if self.phase < 5 and (
            reached or self.steps > PHASE_LIMIT or (self.phase == 2 and self.steps > GRASP_STEPS)
        ):
            self.phase, self.steps = self.phase + 1, 0
        return action


def expert_for_libero(obj_of_interest: list[str]) -> LiberoPickPlacePolicy:
    """The expert of a LIBERO task from its objects of interest; LIBERO-Object's (object, basket) only."""
    if len(obj_of_interest) != 2 or not obj_of_interest[1].startswith("basket"):
        raise ValueError(
            f"no scripted LIBERO expert for a task with objects {obj_of_interest} (LIBERO-Object only)"
        )
    return LiberoPickPlacePolicy(obj_of_interest[0], obj_of_interest[1])
