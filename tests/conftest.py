"""Shared test settings: headless MuJoCo, quiet Ray, small thread counts on the 2-core CI machine."""

import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files with slow tests first, each file's tests in their order. ``make test`` runs each file whole on one of
    two workers (``--dist loadfile --no-loadscope-reorder``, in this order): a long file handed out last would
    leave the other worker idle until it ends, while the many short files at the end keep both busy."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: the files' own order otherwise
