"""The bytes of openpi's websocket protocol: msgpack maps in which numpy arrays travel as openpi encodes
them, ``{b"__ndarray__": True, b"data": raw bytes, b"dtype": dtype.str, b"shape": [...]}`` (numpy
scalars: ``{b"__npgeneric__": True, b"data": value, b"dtype": dtype.str}``).

Decoding is strict, since requests come from the network: only plain numeric and bool dtypes (never
object, void, string or complex: no pickle, no pointers), a shape of non-negative ints whose size
matches the bytes sent, and a cap on array elements. Every problem is a ``WireError`` in one line.
"""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np

# dtype kinds that may cross the wire: bool, signed and unsigned ints, floats
ALLOWED_KINDS = frozenset("biuf")
MAX_ARRAY_ELEMENTS = 64 * 1024 * 1024
MAX_NDIM = 8


class WireError(ValueError):
    """A frame that is not msgpack, or an array field that cannot be decoded safely."""


def _encode(obj: Any) -> Any:
    """msgpack ``default`` hook: numpy arrays and scalars into openpi's maps; anything else is an error."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in ALLOWED_KINDS:
            raise TypeError(f"cannot send an array of dtype {obj.dtype} (allowed: bool, int, uint, float)")
        arr = np.ascontiguousarray(obj)
        return {
            b"__ndarray__": True,
            b"data": arr.tobytes(),
            b"dtype": arr.dtype.str,
            b"shape": list(arr.shape),
        }
    if isinstance(obj, np.generic):
        if obj.dtype.kind not in ALLOWED_KINDS:
            raise TypeError(f"cannot send a scalar of dtype {obj.dtype}")
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise TypeError(f"cannot send a {type(obj).__name__} over the wire")


def _dtype(value: Any) -> np.dtype:
    """A dtype from its ``.str`` form, refused unless numeric or bool."""
    name = value.decode("ascii", "replace") if isinstance(value, bytes) else value
    if not isinstance(name, str):
        raise WireError(f"array dtype must be a string such as '<f4', got {type(value).__name__}")
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError):
        raise WireError(f"array dtype {name!r} is not a numpy dtype") from None
    if dtype.kind not in ALLOWED_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError(f"array dtype {name!r} is not allowed (allowed: bool, int, uint, float)")
    return dtype


def _decode(obj: dict) -> Any:
    """msgpack ``object_hook``: openpi's array and scalar maps back to numpy; other maps unchanged."""
    if b"__ndarray__" in obj:
        data, shape = obj.get(b"data"), obj.get(b"shape")
        dtype = _dtype(obj.get(b"dtype"))
        if not isinstance(data, bytes):
            raise WireError("array data must be bytes")
        if not isinstance(shape, list | tuple) or len(shape) > MAX_NDIM:
            raise WireError(f"array shape must be a list of at most {MAX_NDIM} ints, got {shape!r}"[:200])
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise WireError(f"array shape must hold non-negative ints, got {list(shape)}"[:200])
        size = math.prod(shape)
        if size > MAX_ARRAY_ELEMENTS:
            raise WireError(f"array of shape {list(shape)} exceeds {MAX_ARRAY_ELEMENTS} elements")
        if size * dtype.itemsize != len(data):
            raise WireError(
                f"array of shape {list(shape)} and dtype {dtype.str} needs {size * dtype.itemsize} bytes, "
                f"got {len(data)}"
            )
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    if b"__npgeneric__" in obj:
        dtype = _dtype(obj.get(b"dtype"))
        value = obj.get(b"data")
        if not isinstance(value, bool | int | float):
            raise WireError(f"numpy scalar data must be a number, got {type(value).__name__}")
        try:
            return dtype.type(value)
        except (OverflowError, ValueError) as err:
            raise WireError(f"numpy scalar {value!r} does not fit dtype {dtype.str}: {err}") from None
    return obj


def packb(obj: Any) -> bytes:
    """Encode a message (maps, lists, strings, numbers, numpy arrays) as openpi's clients expect it."""
    return msgpack.packb(obj, default=_encode, use_bin_type=True)


def unpackb(data: bytes) -> Any:
    """Decode a message; anything that is not well-formed msgpack with safe arrays raises ``WireError``."""
    try:
        return msgpack.unpackb(data, object_hook=_decode, raw=False)
    except WireError:
        raise
    except Exception as err:  # noqa: BLE001 - msgpack raises several types for bad bytes
        raise WireError(f"not a msgpack message ({type(err).__name__}: {err})"[:300]) from None
