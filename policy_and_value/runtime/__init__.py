"""Placement grammar, Ray cluster start-up and worker groups."""

from policy_and_value.runtime.placement import Placement, PlacementError, ProcessSlot, parse_placement

__all__ = ["Placement", "PlacementError", "ProcessSlot", "parse_placement"]
