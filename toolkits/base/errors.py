"""The one error type of every config and flag check: one line naming the key, the value and what is allowed."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, ValidationError


class ConfigError(ValueError):
    """An invalid job config; the message is one line naming the key, the value and what is allowed."""


def config_error(key: str, value: Any, allowed: str) -> ConfigError:
    """The one-line error for ``key`` having ``value``, saying what is allowed."""
    return ConfigError(f"config error: {key}={value!r}: {allowed}")


def _lookup(data: Any, loc: tuple) -> Any:
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def _model_at(loc: tuple, root: type[BaseModel]) -> type[BaseModel] | None:
    """The pydantic model that owns the field at ``loc`` (for unknown-key suggestions)."""
    model: Any = root
    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        ann = model.model_fields[part].annotation
        args = getattr(ann, "__args__", ())
        candidates = [a for a in (ann, *args) if isinstance(a, type) and issubclass(a, BaseModel)]
        model = candidates[0] if candidates else ann
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def format_validation_error(err: ValidationError, data: dict, root: type[BaseModel]) -> str:
    """The first schema error of ``root`` as one ``config error: key=value: ...`` line."""
    e = err.errors()[0]
    loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p in ("function-after",))))
    key = ".".join(str(p) for p in loc)
    value = e.get("input", _lookup(data, loc))
    if e["type"] == "extra_forbidden":
        parent = _model_at(loc[:-1], root)
        allowed = sorted(parent.model_fields) if parent else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {'.'.join([*map(str, loc[:-1]), close[0]])!r}? " if close else ""
        return f"config error: {key}: unknown key; {hint}allowed keys here: {', '.join(allowed)}"
    msg = e["msg"]
    if e["type"] == "literal_error":
        msg = "allowed values: " + msg.split("Input should be ", 1)[-1].replace("'", "")
    return f"config error: {key}={value!r}: {msg[0].lower() + msg[1:]}"
