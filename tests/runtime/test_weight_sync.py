"""The weight-sync channel: actor rank 0 broadcasts a state dict to rollout ranks over a gloo group of
their own (two ranks in threads here; the runner tests run it between Ray workers)."""

import socket
import threading

import pytest
import torch

from policy_and_value.runtime.weight_sync import WeightChannel, bucket_plan, layout_of


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sync(tensors, receiver_layout, world_size=3):
    """Rank 0 sends ``tensors``; ranks 1.. receive with ``receiver_layout``; returns what each received."""
    port = _free_port()
    results: dict[int, object] = {}

    def run(rank: int) -> None:
        try:
            channel = WeightChannel("127.0.0.1", port, rank, world_size, timeout_s=30)
            if rank == 0:
                channel.send(tensors)
            else:
                results[rank] = channel.receive(receiver_layout)
        except Exception as err:  # reported to the test below
            results[rank] = err

    threads = [threading.Thread(target=run, args=(r,)) for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_every_rollout_rank_receives_the_exact_tensors(monkeypatch):
    monkeypatch.setattr("policy_and_value.runtime.weight_sync.BUCKET_BYTES", 64)  # several buckets
    g = torch.Generator().manual_seed(0)
    tensors = [
        torch.randn(3, 4, generator=g),
        torch.randn(5, generator=g).to(torch.bfloat16),
        torch.arange(6, dtype=torch.int64).view(2, 3),
        torch.randn(40, generator=g),  # larger than a bucket: a bucket of its own
        torch.randn(2, 2, generator=g).t(),  # not contiguous
    ]
    results = _sync(tensors, layout_of(tensors))
    for rank in (1, 2):
        got = results[rank]
        assert not isinstance(got, Exception), got
        assert all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(tensors, got, strict=True))


def test_a_different_state_layout_is_one_clear_error():
    tensors = [torch.zeros(3), torch.zeros(2)]
    results = _sync(tensors, layout_of([torch.zeros(3), torch.zeros(4)]), world_size=2)
    assert isinstance(results[1], RuntimeError) and "does not match" in str(results[1])
    assert isinstance(results[0], RuntimeError) and "another state dict layout" in str(results[0])  # no hang


def test_buckets_hold_one_dtype_and_respect_the_size_limit():
    layout = [((4,), torch.float32), ((4,), torch.float32), ((4,), torch.bfloat16), ((100,), torch.float32)]
    assert bucket_plan(layout, bucket_bytes=32) == [[0, 1], [2], [3]]
    assert bucket_plan(layout, bucket_bytes=16) == [[0], [1], [2], [3]]
    with pytest.raises(IndexError):
        bucket_plan([], 16)[0]
