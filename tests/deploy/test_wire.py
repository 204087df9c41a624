"""The wire encoding is openpi's: what openpi's client packs we decode, what we pack it decodes; unsafe
arrays (object dtype, wrong byte counts, odd shapes) are refused in one line."""

import msgpack
import numpy as np
import pytest

from tests.deploy.conftest import NO_OPENPI_CLIENT
from toolkits.deploy.wire import WireError, packb, unpackb

pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
from openpi_client import msgpack_numpy  # noqa: E402


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64", "int64", "bool", "float16"])
def test_arrays_cross_both_ways_with_openpi_encoding(dtype):
    value = {"a": np.arange(24).reshape(2, 3, 4).astype(dtype), "s": np.float32(1.5), "t": "x", "n": [1, 2]}
    theirs = unpackb(msgpack_numpy.packb(value))
    ours = msgpack_numpy.unpackb(packb(value))
    for got in (theirs, ours):
        assert got["a"].dtype == np.dtype(dtype) and got["a"].shape == (2, 3, 4)
        np.testing.assert_array_equal(got["a"], value["a"])
        assert got["s"] == np.float32(1.5) and got["t"] == "x" and got["n"] == [1, 2]


def _array_map(data: bytes, dtype: str, shape) -> bytes:
    return msgpack.packb({"x": {b"__ndarray__": True, b"data": data, b"dtype": dtype, b"shape": shape}})


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (b"\xc1\xc1garbage", "not a msgpack message"),
        (_array_map(b"\x00" * 8, "|O", [1]), "'|O' is not allowed"),
        (_array_map(b"\x00" * 16, "<c16", [1]), "not allowed"),
        (_array_map(b"\x00" * 8, "<U2", [1]), "not allowed"),
        (_array_map(b"\x00" * 8, "nonsense", [1]), "is not a numpy dtype"),
        (_array_map(b"\x00" * 7, "<f4", [2]), "needs 8 bytes, got 7"),
        (_array_map(b"\x00" * 8, "<f4", [-2, -1]), "non-negative ints"),
        (_array_map(b"\x00" * 8, "<f4", "2"), "shape must be a list"),
        (_array_map(b"", "<f4", [1 << 20, 1 << 20]), "exceeds"),
    ],
)
def test_unsafe_or_broken_arrays_are_one_line_errors(frame, message):
    with pytest.raises(WireError, match=message) as err:
        unpackb(frame)
    assert "\n" not in str(err.value)


def test_object_arrays_are_not_sent():
    with pytest.raises(TypeError, match="dtype object"):
        packb({"x": np.array([object()])})
