"""Scripted experts of our own: Meta-World tasks whose bundled expert falls short of 90% success, and
LIBERO-Object's pick-and-place (LIBERO ships no expert)."""

from toolkits.experts.libero_pick_place import LiberoPickPlacePolicy, expert_for_libero
from toolkits.experts.peg_insert_side import PegInsertSidePolicy

__all__ = ["LiberoPickPlacePolicy", "PegInsertSidePolicy", "expert_for_libero"]
