"""The benchmark suites the episode collector and the policy evaluator run besides Meta-World (a LIBERO
suite, or ``maniskill``): the env keys that select one, its tasks, cameras and step limits, read without
building a simulator. Both command lines take their defaults and checks from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policy_and_value.envs.libero_tasks import MAX_EPISODE_STEPS  # LIBERO's facts only, no simulator

LIBERO_SUITES = tuple(MAX_EPISODE_STEPS)
NAMES = (*LIBERO_SUITES, "maniskill")  # every suite ``suite`` knows


@dataclass(frozen=True)
class Suite:
    env_keys: dict[str, Any]  # what EnvConfig takes to select the simulator (env_type, suite)
    tasks: list[str]  # all of its tasks, the default when none are named
    tasks_allowed: str  # how an error names the allowed tasks
    cameras: tuple[str, ...]
    step_limits: dict[str, int]  # per task: the episode limit the peers evaluate it with

    def step_limit(self, tasks: list[str]) -> int:
        """The episode limit for a run over ``tasks`` (the longest of theirs; the suite's longest for names
        it does not know, which its checks then reject)."""
        return max(
            (self.step_limits[t] for t in tasks if t in self.step_limits),
            default=max(self.step_limits.values()),
        )


def suite(name: str) -> Suite:
    """The suite called ``name`` (a LIBERO suite or ``maniskill``); KeyError for another name, ImportError
    (naming the install command) when its simulator is not installed."""
    if name == "maniskill":
        from policy_and_value.envs.maniskill_tasks import CAMERAS, TASKS, missing_requirement

        problem = missing_requirement()
        if problem is not None:
            raise ImportError(problem)
        return Suite({"env_type": "maniskill"}, list(TASKS), ", ".join(TASKS), CAMERAS,
                     {t: limit for t, (_, limit) in TASKS.items()})  # fmt: skip
    from policy_and_value.envs.libero_tasks import CAMERAS, suite_tasks

    if name not in LIBERO_SUITES:
        raise KeyError(name)
    known = list(suite_tasks(name))
    return Suite({"env_type": "libero", "suite": name}, known, f"task names of {name}", CAMERAS,
                 dict.fromkeys(known, MAX_EPISODE_STEPS[name]))  # fmt: skip
