"""Scripted experts of our own, for Meta-World tasks whose bundled expert falls short of 90% success."""

from toolkits.experts.peg_insert_side import PegInsertSidePolicy

__all__ = ["PegInsertSidePolicy"]
