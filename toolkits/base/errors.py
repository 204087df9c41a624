"""The one error type of every config and flag check: one line naming the key, the value and what is allowed."""

from __future__ import annotations

import difflib
import typing
from typing import Any

from pydantic import BaseModel, Tag, ValidationError


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


def _members(annotation: Any) -> dict[str | None, type[BaseModel]]:
    """The models an annotation holds (a model, ``X | None``, a tagged union), by their union tag (None untagged)."""
    out: dict[str | None, type[BaseModel]] = {}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {None: annotation}
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        tags = [m.tag for m in args[1:] if isinstance(m, Tag)]
        inner = _members(args[0])
        return {tags[0]: next(iter(inner.values()))} if tags and inner else inner
    for arg in args:
        out.update(_members(arg))
    return out


def _walk(loc: tuple, root: type[BaseModel]) -> tuple[tuple, type[BaseModel] | None]:
    """``loc`` without the union tags pydantic puts in it, and the model that owns its last field (None when
    a part is no model's field)."""
    model: type[BaseModel] | None = root
    key: list[Any] = []
    members: dict[str | None, type[BaseModel]] = {}
    for part in loc:
        if isinstance(part, str) and part in members and len(members) > 1:
            model = members[part]  # a tagged union's member
            continue
        key.append(part)
        if isinstance(part, int) or model is None:
            continue
        if part not in model.model_fields:
            model = None
            continue
        members = _members(model.model_fields[part].annotation)
        model = members.get(None) or (next(iter(members.values())) if members else None)
    return tuple(key), model


def format_validation_error(err: ValidationError, data: dict, root: type[BaseModel]) -> str:
    """The first schema error of ``root`` as one ``config error: key=value: ...`` line."""
    e = err.errors()[0]
    raw = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p in ("function-after",))))
    loc, _ = _walk(raw, root)
    key = ".".join(str(p) for p in loc)
    value = e.get("input", _lookup(data, loc))
    if e["type"] == "union_tag_invalid":  # a tagged union's tag (e.g. env_type) that names no member
        field = str(e["ctx"]["discriminator"]).removeprefix("_").removesuffix("()")
        allowed = str(e["ctx"]["expected_tags"]).replace("'", "")
        return f"config error: {key}.{field}={e['ctx']['tag']!r}: allowed values: {allowed}"
    if e["type"] == "extra_forbidden":
        _, parent = _walk(raw[:-1], root)
        allowed = sorted(parent.model_fields) if parent else []
        hint_of = getattr(parent, "unknown_key_hint", None)
        other = hint_of(str(loc[-1])) if hint_of else None
        if other:
            return f"config error: {key}={value!r}: {other}"
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {'.'.join([*map(str, loc[:-1]), close[0]])!r}? " if close else ""
        return f"config error: {key}: unknown key; {hint}allowed keys here: {', '.join(allowed)}"
    msg = e["msg"]
    if e["type"] == "literal_error":
        msg = "allowed values: " + msg.split("Input should be ", 1)[-1].replace("'", "")
    return f"config error: {key}={value!r}: {msg[0].lower() + msg[1:]}"
