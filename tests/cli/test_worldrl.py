"""The ``worldrl`` command line: every subcommand answers ``--help``, names it in its usage, and runs the same
``main`` as its ``python -m`` module; an unknown one is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import cli

REPO = Path(__file__).resolve().parents[2]
EVERY = [[name] for name in cli.COMMANDS] + [
    [group, name] for group, table in cli.GROUPS.items() for name in table
]


@pytest.mark.parametrize("words", EVERY, ids=[" ".join(w) for w in EVERY])
def test_every_subcommand_answers_help(words, capsys):
    try:
        code = cli.main([*words, "--help"])
    except SystemExit as done:  # argparse's --help
        code = done.code
    out = capsys.readouterr().out
    assert code == 0 and out.strip(), (words, code, out)


def test_argparse_usage_names_the_subcommand(capsys):
    with pytest.raises(SystemExit):
        cli.main(["collect", "--help"])
    assert capsys.readouterr().out.startswith("usage: worldrl collect")


def test_the_overview_lists_every_subcommand(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in [*cli.COMMANDS, *cli.EPISODE_TOOLS, *cli.RECIPES]:
        assert f"  {name} " in out, name


def test_an_unknown_subcommand_is_one_line_with_a_suggestion(capsys):
    assert cli.main(["trian"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: command 'trian': did you mean 'train'?" in err
    assert cli.main(["recipe", "outcome-strat"]) == 2
    assert "did you mean 'outcome-start'?" in capsys.readouterr().err


def test_the_console_script_and_the_module_run_the_same_job_check():
    """``worldrl train`` as installed (console script) and ``python -m policy_and_value.train`` stop a bad key alike."""
    script = Path(sys.executable).with_name("worldrl")
    assert script.is_file(), f"{script}: the console script is not installed (make install)"
    bad = ["ppo_mlp_cartpole", "runner.max_stepz=3"]
    a = subprocess.run([str(script), "train", *bad], capture_output=True, text=True, cwd=REPO)
    b = subprocess.run(
        [sys.executable, "-m", "policy_and_value.train", *bad], capture_output=True, text=True, cwd=REPO
    )
    assert a.returncode == b.returncode == 2
    assert a.stderr == b.stderr and "did you mean 'runner.max_steps'" in a.stderr


def test_a_valid_job_validates_through_the_console_script():
    script = Path(sys.executable).with_name("worldrl")
    done = subprocess.run(
        [str(script), "train", "rl_release", "--validate-only"], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rl_release: valid (env.train world_model")


def test_the_harness_the_recipes_run_imports_outside_the_repository(tmp_path):
    """Recipes run their gauges as ``experiments.harness`` modules in-process: the install must make them importable
    from any working directory, as ``worldrl recipe ...`` runs (the repository root is not on ``sys.path`` there)."""
    done = subprocess.run(
        [sys.executable, "-c", "import experiments.harness.wm_outcome_gauge as g; print(g.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert Path(done.stdout.strip()).is_relative_to(REPO)
