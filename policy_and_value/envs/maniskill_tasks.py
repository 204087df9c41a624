"""ManiSkill3's fixed facts, without importing a simulator: the tabletop tasks this project drives, their
instructions and step limits, sizes, cameras, and where the software Vulkan driver lies (config
validation and the env both use this)."""

from __future__ import annotations

import glob
import importlib.util
import os
import sys

# pd_ee_delta_pose: end-effector translation (3) and rotation (3) deltas, gripper (+1 open, -1 close)
ACTION_DIM = 7
STATE_DIM = 8  # end-effector (TCP) position (3), orientation as axis-angle (3), gripper finger positions (2)
CAMERAS = ("base_camera",)
NUM_RESET_STATES = 1000  # layouts per layout_seed: the reset seed is layout_seed * 1000 + reset state id
# the tasks, the instruction a VLA reads for each, and the step limit ManiSkill registers it with
TASKS = {
    "PickCube-v1": ("pick up the red cube and move it to the green goal", 50),
    "PushCube-v1": ("push the cube to the red and white target", 50),
    "StackCube-v1": ("stack the red cube on the green cube", 50),
}
INSTALL_HINT = (
    "make install-maniskill (mani-skill and, on a machine without a Vulkan driver, Mesa's lavapipe)"
)
# where `make install-maniskill` unpacks Mesa's software Vulkan driver (lavapipe): inside the venv
LAVAPIPE_ICD = os.path.join(sys.prefix, "vulkan", "lvp_icd.json")
SYSTEM_ICD_DIRS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d")


def missing_requirement() -> str | None:
    """Why ManiSkill3 cannot run here (the package or a Vulkan driver is missing, with the command that
    installs it), or None when it can."""
    if importlib.util.find_spec("mani_skill") is None:
        return f"needs the mani-skill package: {INSTALL_HINT}"
    if vulkan_icd() is None:
        return f"needs a Vulkan driver (none in {', '.join(SYSTEM_ICD_DIRS)}): {INSTALL_HINT}"
    return None


def vulkan_icd() -> str | None:
    """The Vulkan driver manifest SAPIEN will load: ``VK_ICD_FILENAMES`` when set, else a system driver
    ("system"), else the lavapipe ``make install-maniskill`` unpacked; None when there is none."""
    if os.environ.get("VK_ICD_FILENAMES"):
        return os.environ["VK_ICD_FILENAMES"]
    if any(glob.glob(os.path.join(d, "*.json")) for d in SYSTEM_ICD_DIRS):
        return "system"
    return LAVAPIPE_ICD if os.path.isfile(LAVAPIPE_ICD) else None


def use_vulkan_driver() -> None:
    """Point the Vulkan loader at the unpacked lavapipe when the system has no driver (before SAPIEN loads)."""
    icd = vulkan_icd()
    if icd == LAVAPIPE_ICD:
        os.environ["VK_ICD_FILENAMES"] = icd
