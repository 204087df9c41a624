"""The command line shared by the offline training tools (imitation, world model, reward model):
``python -m TOOL [CONFIG] [key=value ...]``, validated before any work starts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from toolkits.base.compose import compose_config
from toolkits.base.errors import ConfigError, format_validation_error


def parse_with_overrides(
    parser: argparse.ArgumentParser, argv: list[str] | None = None
) -> tuple[argparse.Namespace, list[str]]:
    """``parser``'s options and the job's ``key=value`` overrides, in any order (``--seeds 0 1 lr=1e-4`` as well
    as ``lr=1e-4 --seeds 0 1``): an override is an argument holding ``=`` that is neither an option nor an
    option's single value; everything else goes to ``parser``, so a misspelt option is an error, not an override."""
    single = {s for action in parser._actions for s in action.option_strings if action.nargs is None}
    options, overrides, value_next = [], [], False
    for arg in sys.argv[1:] if argv is None else argv:
        if value_next or arg.startswith("-") or "=" not in arg:
            options.append(arg)
            value_next = not value_next and arg in single
        else:
            overrides.append(arg)
    return parser.parse_args(options), overrides


def job_cli(
    argv: list[str] | None,
    default_config: str,
    schema: type[BaseModel],
    check: Callable[[Any], None],
    run: Callable[[Any], Any],
    doc: str | None,
) -> int:
    """Compose ``configs/<CONFIG>.yaml`` (default ``default_config``) with overrides, validate it with
    ``schema`` and ``check``, then ``run`` it. A bad config prints one line and returns 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(doc)
        return 0
    name = args.pop(0) if args and "=" not in args[0] else default_config
    try:
        data = compose_config(name, args)
        try:
            job = schema.model_validate(data)
        except ValidationError as err:
            raise ConfigError(format_validation_error(err, data, schema)) from None
        check(job)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    run(job)
    return 0


def tool_prog(module: str) -> str:
    """The program name a tool's usage shows: ``worldrl <command>`` when the ``worldrl`` command runs it (it sets
    ``sys.argv[0]``), else ``python -m <module>``."""
    return sys.argv[0] if sys.argv and sys.argv[0].startswith("worldrl ") else f"python -m {module}"
