"""Timed stages of a recipe: each runs one tool as a user would (its ``main(argv)``), in this process, and its wall
time is kept for the table every recipe prints at its end."""

from __future__ import annotations

import importlib
import shlex
import time
from collections.abc import Callable
from pathlib import Path


def tool_step(module: str, argv: list[str]) -> Callable[[Stages, str], None]:
    """A plan's step that runs the tool ``python -m module argv`` as its stage (``Stages.run_plan`` names it)."""
    return lambda s, name: s.tool(name, module, argv)


class StageFailed(RuntimeError):
    """A stage's tool exited with a non-zero code; the message names the stage and the command."""


class Stages:
    """Runs a recipe's stages in order and records their wall times (``table`` prints them)."""

    def __init__(self, recipe: str, log: Callable[[str], None] = print):
        self.recipe, self.log = recipe, log
        self.times: list[tuple[str, float]] = []
        self.start = time.time()

    def run(
        self, name: str, main: Callable[[list[str]], int | None], argv: list[str], module: str = ""
    ) -> None:
        """Run ``main(argv)`` (a tool's command line; ``module`` its ``python -m`` name, printed) as stage ``name``."""
        command = f"python -m {module} {shlex.join(argv)}" if module else shlex.join(argv)
        self.log(f"== {name}: {command}")
        t0 = time.time()
        try:
            code = main(argv)
        except SystemExit as done:  # argparse, or a tool's own SystemExit("message")
            code = done.code
            if isinstance(code, str):
                raise StageFailed(f"{self.recipe}: stage {name!r}: {code}") from None
        if code not in (0, None):
            raise StageFailed(f"{self.recipe}: stage {name!r} exited with code {code}: {command}")
        self.times.append((name, time.time() - t0))

    def tool(self, name: str, module: str, argv: list[str]) -> None:
        """Run the tool ``python -m module`` (its ``main(argv)``, imported only now) as stage ``name``."""
        self.run(name, lambda a: importlib.import_module(module).main(a), argv, module)

    def call(self, name: str, fn: Callable[[], object]) -> object:
        """Run ``fn()`` as stage ``name`` (work that is not one tool's command line); returns its result."""
        self.log(f"== {name}")
        t0 = time.time()
        out = fn()
        self.times.append((name, time.time() - t0))
        return out

    def skip(self, name: str, output: str | Path) -> None:
        """Note a stage skipped because its output exists (a re-run continues where the last one stopped)."""
        self.log(f"== {name}: {output} exists, skipped")

    def run_plan(
        self, plan: list[tuple[str, str, Callable[[Stages, str], None]]], stop_after: str | None = None
    ) -> bool:
        """Run each ``(stage, output, step)`` of ``plan`` in order (``step(self, stage)``), skipping those whose output exists (a re-run
        continues where the last one stopped); True when it stopped after the stage ``stop_after``."""
        for name, output, step in plan:
            if Path(output).exists():
                self.skip(name, output)
            else:
                step(self, name)
            if name == stop_after:
                return True
        return False

    def table(self) -> str:
        """The total and every stage's wall time, one line each."""
        lines = [f"{self.recipe}: done in {time.time() - self.start:.0f} s"]
        lines += [f"  {name:26s} {seconds:6.0f} s" for name, seconds in self.times]
        return "\n".join(lines)
