"""One policy server for the deploy tests: the shipped quickstart policy (cameras corner + gripperPOV at
64x64, 39-dim state, chunks of 4 actions) with fixed per-request noise, on a free port."""

from __future__ import annotations

import numpy as np
import pytest

from tests.assets import QUICKSTART_TASKS, REPO

POLICY_DIR = REPO / "assets" / "quickstart" / "policy"
CAMERAS = ["corner", "gripperPOV"]
MAX_MESSAGE_MB = 1.0
# the protocol tests run openpi's own client (its PyPI release pins numpy < 2, so it is installed without
# its dependency pins: pip install websockets dm-tree && pip install --no-deps openpi-client==0.1.2)
NO_OPENPI_CLIENT = "openpi-client not installed (pip install --no-deps openpi-client==0.1.2; see README)"


@pytest.fixture(scope="package", autouse=True)
def one_torch_thread():
    """One intra-op thread whenever the deploy tests run. The server infers in executor threads, which keep
    the thread count they started with, and the tests compare with the main thread's answers; a pytest-xdist
    worker runs other files between the deploy files, and in-process workers there set the main thread to
    one thread: 1 against 2 threads round differently (2e-7), and a closed-loop episode can turn that into
    another outcome."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def served():
    """The quickstart policy behind ``ServedPolicy`` (seed 0: answers depend on the observation only)."""
    from toolkits.deploy.served import ServedPolicy

    return ServedPolicy(POLICY_DIR, cameras=CAMERAS, tasks=list(QUICKSTART_TASKS), seed=0)


@pytest.fixture(scope="session")
def server(served):
    """A running ``PolicyServer`` for ``served`` (1 MB frames at most); yields the ``ServerThread``."""
    from toolkits.deploy.serve_policy import PolicyServer, ServerThread

    with ServerThread(PolicyServer(served, port=0, max_message_mb=MAX_MESSAGE_MB)) as thread:
        yield thread


def observation(seed: int, size: int = 64, prompt: str = "reach-v3") -> dict:
    """An openpi-style observation with random frames and state."""
    rng = np.random.default_rng(seed)
    return {
        "observation/image": rng.integers(0, 256, (size, size, 3), dtype=np.uint8),
        "observation/wrist_image": rng.integers(0, 256, (size, size, 3), dtype=np.uint8),
        "observation/state": rng.normal(size=39).astype(np.float32),
        "prompt": prompt,
    }
