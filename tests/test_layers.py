"""The layers written in docs/design.md hold: no import (module level or inside a function) reaches a layer above
its own, and no imports form a cycle; the check itself fails on an injected cycle."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.layers import PACKAGES, check, read_layers

REPO = Path(__file__).resolve().parents[1]
LAYERS = read_layers(REPO / "docs" / "design.md")


def test_every_import_keeps_to_the_written_layers_and_none_makes_a_cycle():
    assert check(REPO, LAYERS) == []


def test_an_import_inside_a_function_that_makes_a_cycle_is_named(tmp_path):
    """The project copied, then the job schema made to import the runner inside a function: the runner imports
    the schema, so the check names the upward import and the cycle."""
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc", "__pycache__")
        )
    schema = tmp_path / "policy_and_value" / "config" / "schema.py"
    schema.write_text(
        schema.read_text() + "\n\ndef _late():\n    from policy_and_value.runner.runner import run_job\n"
    )
    problems = check(tmp_path, LAYERS)
    assert any(
        p.startswith(
            "policy_and_value.config.schema (schema) imports policy_and_value.runner.runner (runner)"
        )
        for p in problems
    ), problems
    assert any(
        "import cycle between modules" in p and "policy_and_value.config.schema" in p for p in problems
    )


def test_a_module_in_no_layer_is_named(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "toolkits" / "stray.py").write_text("import os\n")
    layers = [("top", ["toolkits.cli"]), ("base", ["toolkits.base"])]
    assert check(tmp_path, layers) == ["toolkits.stray: in no layer of docs/design.md"]
