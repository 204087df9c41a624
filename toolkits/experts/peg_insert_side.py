"""A scripted expert for Meta-World ``peg-insert-side-v3`` that grasps before it lifts.

Meta-World's bundled expert closes the gripper while still 15 cm above the peg (so the closed fingers can
land on the peg and stall) and starts moving as soon as the hand is near, which drops the peg on some
layouts. This one descends with the gripper open, closes it at grasp height, lifts only once the
fingers have stopped closing, and then steers the peg (not the hand) to the hole: first to a point in
front of it at the hole's height, then straight in. Stateless: it reads everything from the observation.
"""

from __future__ import annotations

import numpy as np

HOLE_X = -0.35  # the hole's depth along x (the box side); its y comes from the goal, z is fixed
HOLE_Z = 0.16
APPROACH = 0.4  # stand-off in front of the hole before pushing in


class PegInsertSidePolicy:
    """``get_action(obs) -> [dx, dy, dz, grip]`` in [-1, 1], like Meta-World's policies."""

    def get_action(self, obs: np.ndarray) -> np.ndarray:
        hand, grip, peg, goal = obs[:3], obs[3], obs[4:7], obs[-3:]
        prev_grip = obs[21]  # the previous frame's gripper opening (obs[18:36] repeats the last observation)
        hole = np.array([HOLE_X, goal[1], HOLE_Z])
        near_xy = np.linalg.norm(hand[:2] - peg[:2]) < 0.02
        at_height = hand[2] - peg[2] < 0.03  # the hand frame stops about 2 cm above the peg
        lifted = peg[2] > 0.05
        if lifted and near_xy:  # carrying: steer the peg, the hand follows with its offset
            front = hole + np.array([APPROACH, 0.0, 0.0])
            aim = hole if np.linalg.norm(peg[1:] - hole[1:]) < 0.02 else front
            return self._action(hand, hand + (aim - peg), 1.0, gain=10.0)
        if not near_xy:  # above the peg, gripper open
            return self._action(hand, peg + np.array([0.0, 0.0, 0.15]), -1.0)
        if not at_height:  # straight down, gripper open
            return self._action(hand, peg, -1.0)
        closing = prev_grip - grip > 1e-3 or grip > 0.6
        if closing:  # at grasp height: close and wait
            return self._action(hand, peg, 1.0)
        return self._action(hand, peg + np.array([0.0, 0.0, 0.1]), 1.0)  # fingers closed: lift

    @staticmethod
    def _action(hand: np.ndarray, target: np.ndarray, grip: float, gain: float = 25.0) -> np.ndarray:
        """A proportional move of the hand towards ``target`` (clipped to the action range) and the grip."""
        return np.array([*np.clip((target - hand) * gain, -1.0, 1.0), grip], dtype=np.float32)
