"""Latency and throughput of the policy server, measured through openpi's own client.

    .venv/bin/python benchmarks/serve_latency.py [--policy-dir assets/quickstart/policy] \\
        [--cameras corner gripperPOV] [--clients 1 8 32] [--seconds 5] [--max-batch N] [--url ws://HOST:PORT]

Starts ``python -m toolkits.deploy.serve_policy`` on a free port (or uses ``--url``), then for each
number of clients runs that many ``WebsocketClientPolicy`` connections in threads, each sending
openpi-style observations (two 64x64 uint8 frames, a 39-dim state, a prompt) back to back for
``--seconds`` after a warm-up, and prints the round-trip latency (p50, p99) and requests/s over all.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def observation(rng: np.random.Generator, meta: dict) -> dict:
    """A random observation in the server's keys and sizes."""
    size = int(meta["image_size"][0])
    obs = {k: rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for k in meta["image_keys"]}
    obs[meta["state_key"]] = rng.normal(size=int(meta["state_dim"])).astype(np.float32)
    obs[meta["prompt_key"]] = next(iter(meta["prompts"]), "reach-v3") if meta.get("prompts") else "reach-v3"
    return obs


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str, int]:
    """``serve_policy`` in a subprocess on a free port; returns it, host and port once it listens."""
    cmd = [
        sys.executable,
        "-m",
        "toolkits.deploy.serve_policy",
        "--policy-dir",
        args.policy_dir,
        "--port",
        "0",
    ]
    if args.cameras:
        cmd += ["--cameras", *args.cameras]
    if args.tasks:
        cmd += ["--tasks", *args.tasks]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.max_batch:
        cmd += ["--max-batch", str(args.max_batch)]
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("serving "):
            url = line.split(" on ", 1)[1].split()[0]
            host, port = url.removeprefix("ws://").rsplit(":", 1)
            return proc, host, int(port)
    raise RuntimeError(f"the server exited (code {proc.wait()}) before listening")


def run_clients(host: str, port: int, clients: int, seconds: float, warmup: int) -> tuple[list[float], float]:
    """``clients`` threads sending back to back; every round-trip latency (s) after warm-up, and the span."""
    from openpi_client.websocket_client_policy import WebsocketClientPolicy

    latencies: list[list[float]] = [[] for _ in range(clients)]
    finished = [0.0] * clients  # when each client's last measured answer arrived
    stop_at: list[float] = []  # set as the barrier releases, before any client measures
    barrier = threading.Barrier(clients + 1, action=lambda: stop_at.append(time.perf_counter() + seconds))

    def client(i: int) -> None:
        """One client: warm up, wait for the others, then send back to back until the deadline."""
        policy = WebsocketClientPolicy(host, port)
        rng = np.random.default_rng(i)
        obs = [observation(rng, policy.get_server_metadata()) for _ in range(4)]
        for k in range(warmup):
            policy.infer(obs[k % 4])
        barrier.wait()
        k = 0
        while time.perf_counter() < stop_at[0]:
            start = time.perf_counter()
            policy.infer(obs[k % 4])
            finished[i] = time.perf_counter()
            latencies[i].append(finished[i] - start)
            k += 1
        policy._ws.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    begin = stop_at[0] - seconds
    for t in threads:
        t.join()
    return [x for per in latencies for x in per], max(finished) - begin


def main(argv: list[str] | None = None) -> int:
    """CLI: one table row per number of clients."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy-dir", default=str(REPO / "assets" / "quickstart" / "policy"))
    p.add_argument(
        "--cameras", nargs="+", default=["corner", "gripperPOV"], help="for a directory without deploy.json"
    )
    p.add_argument("--tasks", nargs="+", default=["reach-v3", "drawer-close-v3", "button-press-topdown-v3"])
    p.add_argument("--clients", nargs="+", type=int, default=[1, 8, 32])
    p.add_argument("--seconds", type=float, default=5.0, help="measured time per row")
    p.add_argument("--warmup", type=int, default=3, help="requests per client before measuring")
    p.add_argument("--threads", type=int, default=None, help="the server's torch threads")
    p.add_argument("--max-batch", type=int, default=None, help="the server's --max-batch (default: its own)")
    p.add_argument("--url", default=None, help="measure a running server instead (ws://HOST:PORT)")
    args = p.parse_args(argv)
    proc = None
    if args.url:
        host, port = args.url.removeprefix("ws://").rsplit(":", 1)
        port = int(port)
    else:
        proc, host, port = start_server(args)
    try:
        print(f"server ws://{host}:{port}, {os.cpu_count()} CPUs, {args.seconds:g} s per row")
        print("| clients | requests | p50 ms | p99 ms | requests/s |\n|---|---|---|---|---|")
        for n in args.clients:
            lat, span = run_clients(host, port, n, args.seconds, args.warmup)
            ms = np.asarray(lat) * 1000.0
            print(
                f"| {n} | {len(lat)} | {np.percentile(ms, 50):.1f} | {np.percentile(ms, 99):.1f} | "
                f"{len(lat) / span:.1f} |",
                flush=True,
            )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
