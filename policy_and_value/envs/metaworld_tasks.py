"""Meta-World task names (MT10, MT50) and the natural-language instruction used as each task's prompt.

A static table so that configs can be validated without importing MuJoCo; a test checks it against
the installed metaworld.
"""

from __future__ import annotations

# the cameras of Meta-World's scene an env can render
CAMERAS = ("corner", "corner2", "corner3", "corner4", "topview", "behindGripper", "gripperPOV")

PROMPTS: dict[str, str] = {
    "assembly-v3": "pick up the nut and place it onto the peg",
    "basketball-v3": "dunk the basketball into the basket",
    "bin-picking-v3": "grasp the puck from one bin and place it into the other bin",
    "box-close-v3": "grasp the lid and close the box with it",
    "button-press-topdown-v3": "press the button from the top",
    "button-press-topdown-wall-v3": "bypass the wall and press the button from the top",
    "button-press-v3": "press the button",
    "button-press-wall-v3": "bypass the wall and press the button",
    "coffee-button-v3": "push the button on the coffee machine",
    "coffee-pull-v3": "pull the mug from the coffee machine",
    "coffee-push-v3": "push the mug under the coffee machine",
    "dial-turn-v3": "rotate the dial 180 degrees",
    "disassemble-v3": "pick the nut out of the peg",
    "door-close-v3": "close the door with a revolving joint",
    "door-lock-v3": "lock the door by rotating the lock clockwise",
    "door-open-v3": "open the door with a revolving joint",
    "door-unlock-v3": "unlock the door by rotating the lock counter-clockwise",
    "drawer-close-v3": "push and close the drawer",
    "drawer-open-v3": "open the drawer",
    "faucet-close-v3": "rotate the faucet clockwise",
    "faucet-open-v3": "rotate the faucet counter-clockwise",
    "hammer-v3": "hammer the screw on the wall",
    "hand-insert-v3": "insert the gripper into the hole",
    "handle-press-side-v3": "press the handle down sideways",
    "handle-press-v3": "press the handle down",
    "handle-pull-side-v3": "pull the handle up sideways",
    "handle-pull-v3": "pull the handle up",
    "lever-pull-v3": "pull the lever down 90 degrees",
    "peg-insert-side-v3": "insert the peg sideways into the hole",
    "peg-unplug-side-v3": "unplug the peg sideways",
    "pick-out-of-hole-v3": "pick up the puck from the hole",
    "pick-place-v3": "pick up the puck and place it at the goal",
    "pick-place-wall-v3": "pick up the puck, bypass the wall and place it at the goal",
    "plate-slide-back-side-v3": "get the plate from the cabinet sideways",
    "plate-slide-back-v3": "get the plate from the cabinet",
    "plate-slide-side-v3": "slide the plate into the cabinet sideways",
    "plate-slide-v3": "slide the plate into the cabinet",
    "push-back-v3": "push the puck back to the goal",
    "push-v3": "push the puck to the goal",
    "push-wall-v3": "bypass the wall and push the puck to the goal",
    "reach-v3": "reach the goal position",
    "reach-wall-v3": "bypass the wall and reach the goal position",
    "shelf-place-v3": "pick up the puck and place it onto the shelf",
    "soccer-v3": "kick the soccer ball into the goal",
    "stick-pull-v3": "grasp the stick and pull the box with it",
    "stick-push-v3": "grasp the stick and push the box with it",
    "sweep-into-v3": "sweep the puck into the hole",
    "sweep-v3": "sweep the puck off the table",
    "window-close-v3": "push and close the window",
    "window-open-v3": "push and open the window",
}

MT50_TASKS: tuple[str, ...] = tuple(sorted(PROMPTS))
MT10_TASKS: tuple[str, ...] = (
    "reach-v3",
    "push-v3",
    "pick-place-v3",
    "door-open-v3",
    "drawer-open-v3",
    "drawer-close-v3",
    "button-press-topdown-v3",
    "peg-insert-side-v3",
    "window-open-v3",
    "window-close-v3",
)


FULL_STATE_DIM = 39  # Meta-World's observation: hand, gripper, objects, the previous frame's values, goal
PROPRIO_DIM = 4  # its first entries: hand xyz + gripper opening


# LIBERO's and ManiSkill's state: end-effector position, axis-angle, two gripper numbers
SIMULATOR_PROPRIO_DIM = 8


def select_state(state, state_type: str):
    """The state a policy or model sees: all of it (``full``) or the proprioception (``proprio``): the first 4 of
    Meta-World's numbers; a state of LIBERO's or ManiSkill's 8 numbers is their proprioception already and stays
    whole, so ``proprio`` reads the robot's own state from a recording of any of these simulators."""
    if selected_state_dim(state.shape[-1], state_type) == state.shape[-1]:
        return state
    return state[..., :PROPRIO_DIM]


def selected_state_dim(state_dim: int, state_type: str) -> int:
    """How many numbers ``select_state`` keeps of a state of ``state_dim`` (the config checks size envs with it)."""
    return state_dim if state_type == "full" or state_dim == SIMULATOR_PROPRIO_DIM else PROPRIO_DIM


def state_type_for(state_dim: int) -> str:
    """The ``state_type`` whose states a model of ``state_dim`` inputs takes (``proprio`` or ``full``)."""
    return "proprio" if state_dim == PROPRIO_DIM else "full"
