"""Typed, validated recipe arguments: a recipe's pydantic model becomes its command line (one ``--flag`` per field,
its help from the field's description), and a bad value stops it with one line naming the flag before any work."""

from __future__ import annotations

import argparse
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from toolkits.base.errors import ConfigError, config_error
from toolkits.base.schema import Strict
from toolkits.recipes.stages import StageFailed, Stages

Args = TypeVar("Args", bound=BaseModel)


def flag(name: str) -> str:
    """The command-line flag of field ``name`` (``base_model`` -> ``--base-model``)."""
    return "--" + name.replace("_", "-")


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_list(a) for a in typing.get_args(annotation) if a is not type(None))
    return origin is list


def build_parser(model: type[BaseModel], prog: str, description: str) -> argparse.ArgumentParser:
    """An argparse parser with one flag per field of ``model``: booleans are switches, lists take several values,
    required fields are required; values stay strings for pydantic to convert and check."""
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    for name, field in model.model_fields.items():
        help_text = (field.description or "").replace("%", "%%")  # argparse formats help with %
        if field.annotation is bool:
            parser.add_argument(flag(name), action="store_true", default=None, help=help_text)
            continue
        default = "" if field.is_required() else f" (default: {field.get_default(call_default_factory=True)})"
        parser.add_argument(
            flag(name), dest=name, required=field.is_required(), nargs="*" if _is_list(field.annotation) else None,
            metavar=name.upper(), help=help_text + default,
        )  # fmt: skip
    return parser


def parse_args(model: type[Args], argv: list[str] | None, prog: str, description: str) -> Args:
    """``argv`` parsed into ``model``; a value the model refuses raises ``ConfigError`` naming the flag."""
    namespace = build_parser(model, prog, description).parse_args(argv)
    given = {k: v for k, v in vars(namespace).items() if v is not None}
    try:
        args = model.model_validate(given)
    except ValidationError as err:
        e = err.errors()[0]
        name = str(e["loc"][0]) if e["loc"] else "?"
        value = given.get(name, e.get("input"))
        msg = e["msg"].removeprefix("Value error, ")
        raise ConfigError(f"config error: {flag(name)}={value!r}: {msg[0].lower() + msg[1:]}") from None
    if isinstance(args, RecipeArgs):
        args.check()
    return args


class RecipeArgs(Strict):
    """A recipe's arguments (unknown fields refused); ``check`` looks at the file system (the output folder is new,
    inputs exist) before any work, raising ``ConfigError`` naming the flag."""

    def check(self) -> None:
        """Refuse an existing output folder (``out``): a recipe never overwrites an earlier build."""
        out = getattr(self, "out", None)
        if out is not None and Path(out).exists():
            raise config_error("--out", out, "exists; choose a new directory")


def require_dir(flag_name: str, path: str, marker: str, what: str) -> None:
    """``path`` must hold ``marker`` (``config.json``, ``index.json``), else one line naming the flag."""
    if not (Path(path) / marker).is_file():
        raise config_error(flag_name, path, f"no {marker}; expected {what}")


def recipe_main(
    model: type[Args], run: Callable[[Args], Stages], argv: list[str] | None, prog: str, description: str
) -> int:
    """A recipe's command line: parse and check its arguments (a bad one: one line, exit 2), run it, print every
    stage's wall time; a stage that fails ends it with one line naming the stage, exit 1."""
    try:
        args = parse_args(model, argv, prog, description)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    try:
        stages = run(args)
    except (StageFailed, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print("\n" + stages.table())
    return 0
