"""The check every recipe's bad-input test makes: one line on stderr naming the flag, exit 2, nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def assert_refused_before_any_work(
    main: Callable[[list[str]], int], flags: list[str], message: str, tmp_path: Path, capsys
) -> None:
    """``main(flags + --out tmp/x)`` exits 2 with one stderr line holding ``message`` and makes no ``--out``;
    ``{tmp}`` in ``flags`` and ``message`` stands for ``tmp_path``."""
    argv = [f.format(tmp=tmp_path) for f in flags] + ["--out", str(tmp_path / "x")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(tmp=tmp_path) in err, err
    assert not (tmp_path / "x").exists()
