"""Reliability: over a thousand malformed requests (not msgpack, wrong keys, shapes, dtypes, NaNs,
oversized frames) each get an error and the server keeps serving; 32 concurrent clients get their own
correct answers."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import msgpack
import numpy as np
import pytest

from tests.deploy.conftest import MAX_MESSAGE_MB, NO_OPENPI_CLIENT, observation

pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
import websockets.sync.client  # noqa: E402
from openpi_client import msgpack_numpy  # noqa: E402
from openpi_client.websocket_client_policy import WebsocketClientPolicy  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

NUM_MALFORMED = 1040


def _raw_array(data: bytes, dtype: str, shape) -> dict:
    return {b"__ndarray__": True, b"data": data, b"dtype": dtype, b"shape": shape}


def malformed_frame(i: int) -> tuple[bytes | str, str]:
    """The ``i``-th malformed request (cycling through the kinds) and the reply expected: "1011" (text
    frame then close 1011) or "1009" (frame over the size limit)."""
    rng = np.random.default_rng(i)
    good = observation(i % 7)
    pack = msgpack_numpy.packb
    kinds = [
        lambda: rng.bytes(int(rng.integers(1, 200))),  # not msgpack (random bytes)
        lambda: "a text frame, not msgpack",
        lambda: pack([1, 2, 3]),  # not a map
        lambda: pack("observation"),
        lambda: pack({k: v for k, v in good.items() if k != list(good)[i % 4]}),  # a key missing
        lambda: pack({k.replace("observation/", "obs/"): v for k, v in good.items()}),  # wrong key names
        lambda: pack({**good, "observation/image": np.zeros((64, 64), np.uint8)}),  # 2-D image
        lambda: pack({**good, "observation/image": np.zeros((64, 64, 4), np.uint8)}),  # 4 channels
        lambda: pack({**good, "observation/wrist_image": np.zeros((1, 2, 64, 64, 3), np.uint8)}),
        lambda: pack({**good, "observation/image": np.zeros((0, 64, 3), np.uint8)}),  # empty
        lambda: pack({**good, "observation/image": np.zeros((64, 64, 3), np.int64)}),  # wrong dtype
        lambda: pack({**good, "observation/image": np.full((8, 8, 3), 2.0, np.float32)}),  # float > 1
        lambda: pack({**good, "observation/image": np.full((8, 8, 3), np.nan, np.float32)}),
        lambda: pack({**good, "observation/state": np.zeros(int(rng.integers(1, 38)), np.float32)}),
        lambda: pack({**good, "observation/state": np.zeros((39, 2), np.float32)}),
        lambda: pack({**good, "observation/state": np.float32(1.0)}),
        lambda: pack({**good, "observation/state": np.ones(39, bool)}),
        lambda: pack({**good, "observation/state": ["a"] * 39}),
        lambda: pack({**good, "observation/state": np.where(np.arange(39) == i % 39, np.nan, 0.0)}),
        lambda: pack({**good, "observation/state": np.full(39, np.inf)}),
        lambda: pack({**good, "observation/state": np.full(39, 1e300)}),  # beyond float32
        lambda: pack({**good, "prompt": 42}),
        lambda: pack({**good, "prompt": ""}),
        lambda: pack({**good, "prompt": "x" * 5000}),
        lambda: msgpack.packb({**good, "observation/state": _raw_array(b"\0" * 8, "|O", [1])}, default=msgpack_numpy.pack_array),
        lambda: msgpack.packb({**good, "observation/state": _raw_array(b"\0" * 10, "<f4", [39])}, default=msgpack_numpy.pack_array),
        lambda: msgpack.packb({**good, "observation/state": _raw_array(b"\0" * 312, "<c8", [39])}, default=msgpack_numpy.pack_array),
        lambda: b"\x91" * 100_000 + b"\xc0",  # nested past msgpack's depth limit
        lambda: pack({**good, "observation/image": np.zeros((700, 700, 3), np.uint8)}),  # over 1 MB
    ]  # fmt: skip
    kind = i % len(kinds)
    return kinds[kind](), "1009" if kind == len(kinds) - 1 else "1011"


def send_malformed(url: str, i: int) -> str:
    """Send request ``i`` on a fresh connection; returns what came back ("1011: <error>" or "1009")."""
    frame, _ = malformed_frame(i)
    with websockets.sync.client.connect(url, compression=None, max_size=None, open_timeout=30) as ws:
        ws.recv(timeout=30)  # metadata
        ws.send(frame)
        try:
            error = ws.recv(timeout=30)
        except ConnectionClosed as closed:
            return str(closed.rcvd.code if closed.rcvd else None)
        assert isinstance(error, str), f"request {i}: expected an error text frame, got {type(error)}"
        try:
            ws.recv(timeout=30)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1011, (i, closed.rcvd)
            return f"1011: {error}"
        raise AssertionError(f"request {i}: the connection stayed open after the error")


def test_over_a_thousand_malformed_requests_each_get_an_error_and_the_server_keeps_serving(server, served):
    url = f"ws://127.0.0.1:{server.server.port}"
    errors_before = server.server.errors
    healthy = WebsocketClientPolicy("127.0.0.1", server.server.port)
    expected = served.infer(observation(0))["actions"]
    replies: list[str] = []
    with ThreadPoolExecutor(4) as pool:
        for start in range(0, NUM_MALFORMED, 130):
            batch = range(start, min(start + 130, NUM_MALFORMED))
            replies += list(pool.map(lambda i: send_malformed(url, i), batch))
            np.testing.assert_array_equal(healthy.infer(observation(0))["actions"], expected)
    for i, reply in enumerate(replies):
        want = malformed_frame(i)[1]
        assert reply.startswith(want), (i, reply)
        if want == "1011":
            text = reply.split(": ", 1)[1]
            assert text.startswith("bad request: ") and "\n" not in text, (i, text)
    assert (
        server.server.errors - errors_before >= NUM_MALFORMED * 28 // 29
    )  # 1009s close in websockets itself
    np.testing.assert_array_equal(healthy.infer(observation(0))["actions"], expected)
    healthy._ws.close()
    assert MAX_MESSAGE_MB == 1.0  # the oversized kind (700x700x3 bytes) relies on it


def test_32_concurrent_clients_get_their_own_correct_answers(server, served):
    """Requests that wait together are inferred as one batch; each client still gets its own chunk (equal
    to the chunk of its observation alone up to float rounding)."""
    clients, per_client = 32, 3
    expected = {
        (c, k): served.infer(observation(100 * c + k))["actions"]
        for c in range(clients)
        for k in range(per_client)
    }
    barrier = threading.Barrier(clients)

    def run(c: int) -> tuple[dict, int]:
        policy = WebsocketClientPolicy("127.0.0.1", server.server.port)
        barrier.wait(timeout=120)
        got, batch = {}, 1
        for k in range(per_client):
            reply = policy.infer(observation(100 * c + k))
            got[(c, k)] = reply["actions"]
            batch = max(batch, reply["server_timing"]["batch_size"])
        policy._ws.close()
        return got, batch

    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(run, range(clients)))
    for got, _ in results:
        for key, actions in got.items():
            np.testing.assert_allclose(actions, expected[key], atol=1e-5, rtol=0)
    assert max(batch for _, batch in results) > 1  # the clients did share forward passes
