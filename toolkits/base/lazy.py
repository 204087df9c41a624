"""Lazy package exports (PEP 562): a package's public names are imported from their modules on first use,
so importing one light module of a package (a preset table, a task list) does not import torch or
transformers with it. Config validation and ``--validate-only`` stay fast because of this."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, sources: dict[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name from ``package.<module>`` as listed
    in ``sources`` (module -> names) the first time it is asked for, and keeps it."""
    module_of = {name: module for module, names in sources.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module_of[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
