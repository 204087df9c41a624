"""Scripted experts of our own: Meta-World tasks whose bundled expert falls short of 90% success, and
LIBERO-Object's pick-and-place and ManiSkill3's cube tasks (neither ships an expert usable offline)."""

from toolkits.experts.libero_pick_place import LiberoPickPlacePolicy, expert_for_libero
from toolkits.experts.maniskill_cubes import ManiSkillCubePolicy
from toolkits.experts.peg_insert_side import PegInsertSidePolicy

__all__ = ["LiberoPickPlacePolicy", "ManiSkillCubePolicy", "PegInsertSidePolicy", "expert_for_libero"]
