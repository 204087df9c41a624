"""Serve a policy directory to robots over openpi's websocket protocol (``openpi-client`` works unchanged).

    python -m toolkits.deploy.serve_policy --policy-dir DIR [--host 127.0.0.1] [--port 8000] \\
        [--api-key KEY] [--max-message-mb 16] [--max-batch 8] [--seed 0] [--cameras corner gripperPOV] \
        [--record DIR [--record-max-steps 10000]]
    python -m toolkits.deploy.serve_policy --registry ROOT [--follow-interval 2] [...]

``--registry ROOT`` serves the current version of a policy registry (``worldrl registry``) and follows it: when the
pointer moves (a publish, a rollback) the new version serves the episodes that begin after the move, while episodes
already running end on the version they began on (``toolkits/deploy/policy_source.py``); a version whose interface
differs (cameras, sizes) is refused with a log line. The metadata frame, every answer (``"policy_version"``, only
with ``--registry``) and every recorded episode name the version that acted.

Protocol (openpi's): binary frames of msgpack with numpy arrays in openpi's encoding. On connect the
server sends one metadata map (cameras, the request key of each camera's image, image size, state
and action sizes, chunk size, the prompts it knows). Then every observation frame gets one answer,
``{"actions": float32 [chunk_size, action_dim], "server_timing": {"infer_ms", "prev_total_ms"}}``.
A request the server cannot act on gets one text frame with the error (one line) and the connection
is closed with code 1011, as openpi's server does; a frame over ``--max-message-mb`` closes it with
1009. ``GET /healthz`` answers 200. With ``--api-key`` a connection must send the header
``Authorization: Api-Key KEY`` (what ``WebsocketClientPolicy(api_key=...)`` sends) or gets HTTP 401.
Inference runs in a worker thread, so the event loop keeps answering pings during slow inference;
requests that wait together (from several clients) are inferred as one batch of up to ``--max-batch``.
``--seed`` draws each request's initial noise from the seed and a hash of its observation, so an answer
depends on the observation alone (reproducible; without it every request draws fresh noise).

``--record DIR`` saves what is served as episodes in the project's episode format (``index.json`` +
one HDF5 file per episode, as ``toolkits.collect_episodes`` writes; see ``toolkits/deploy/record.py``),
one episode per connection at a time. Two more messages end and fill in an episode; both are answered
with a small map, with or without ``--record`` (the metadata's ``"recording"`` says which):

- ``{"episode_end": true, "success": true | false | null}`` (optionally with the final observation's
  keys): the outcome; answered ``{"episode_end": true, "recording": bool, "steps": T, "outcome": ...,
  "file": ...}`` once the episode is on disk. A connection closed with an episode open saves it with
  outcome unknown (``success_once`` null).
- ``{"record_step": true, <observation keys>}``: an observation the robot took while executing the rest
  of its chunk (no inference); answered ``{"record_step": true, "step": t, "recording": bool}``. With it
  the episode has every step's observation and action, as collected episodes do.

A robot sends both through ``WebsocketClientPolicy.infer``; a malformed one (e.g. ``success`` not a
bool) is a bad request like any other.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import http
import logging
import signal
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from websockets.asyncio.server import Request, Response, Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from toolkits.base.cli import tool_prog
from toolkits.base.errors import ConfigError
from toolkits.deploy.inference_thread import DEFAULT_MAX_BATCH, InferenceThread
from toolkits.deploy.policy_source import FixedPolicy, RegistryFollower
from toolkits.deploy.record import (
    DEFAULT_MAX_STEPS,
    END,
    OBSERVATION,
    OUTCOMES,
    STEP,
    EpisodeBuffer,
    EpisodeRecorder,
    Message,
    PendingEpisode,
)
from toolkits.deploy.serve_checks import bind_error, check_args
from toolkits.deploy.served import BadRequest, ServedPolicy
from toolkits.deploy.wire import WireError, packb

log = logging.getLogger("toolkits.deploy.serve_policy")
DEFAULT_MAX_MESSAGE_MB = 16.0


class PolicyServer:
    """The websocket server around a ``ServedPolicy``, or the versions of a registry a ``RegistryFollower`` follows
    (one inference thread; any number of clients)."""

    def __init__(
        self,
        served: ServedPolicy | FixedPolicy | RegistryFollower,
        host: str = "127.0.0.1",
        port: int = 8000,
        api_key: str | None = None,
        max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
        max_batch: int = DEFAULT_MAX_BATCH,
        record: str | None = None,
        record_max_steps: int = DEFAULT_MAX_STEPS,
    ):
        if max_message_mb <= 0:
            raise ValueError(f"--max-message-mb={max_message_mb}: must be > 0")
        if record_max_steps < 1:
            raise ValueError(f"--record-max-steps={record_max_steps}: must be >= 1")
        self.source = served if isinstance(served, FixedPolicy | RegistryFollower) else FixedPolicy(served)
        self.served = served = self.source.first
        self.host, self.port = host, port
        self.api_key = api_key or None
        self.max_message_bytes = int(max_message_mb * 1024 * 1024)
        self.recorder = EpisodeRecorder(record, served) if record else None
        self.record_max_steps = record_max_steps
        self.metadata = {
            **served.metadata(), "max_message_bytes": self.max_message_bytes, "recording": bool(record),
        }  # fmt: skip
        self.inference = InferenceThread(served, max_batch)
        self.requests = 0  # answered observations
        self.errors = 0  # requests answered with an error
        self.connections = 0  # connections opened (each numbers its recorded episodes)

    # ------------------------------------------------------------------ HTTP before the handshake
    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """``GET /healthz`` -> 200 (no key needed); with an API key, a missing or wrong one -> 401."""
        if request.path.split("?")[0] == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        if self.api_key is not None:
            sent = request.headers.get("Authorization", "")
            if not hmac.compare_digest(sent.encode(), f"Api-Key {self.api_key}".encode()):
                return connection.respond(
                    http.HTTPStatus.UNAUTHORIZED,
                    "missing or wrong API key (header 'Authorization: Api-Key <key>')\n",
                )
        return None

    # ------------------------------------------------------------------ one connection
    async def _fail(self, ws: ServerConnection, message: str) -> None:
        """openpi's error path: the error as a text frame, then close with 1011."""
        self.errors += 1
        try:
            await ws.send(message)
            await ws.close(CloseCode.INTERNAL_ERROR, "error in the previous frame")
        except ConnectionClosed:
            pass

    def _record(
        self, pending: PendingEpisode | None, policy: tuple[int | None, ServedPolicy]
    ) -> Future | None:
        """Hand a finished episode, named by the version that acted, to the writer thread (nothing without
        ``--record``)."""
        if self.recorder is None or pending is None:
            return None
        return self.recorder.submit(pending, *policy)

    async def _control(
        self, message: Message, episode: EpisodeBuffer, policy: tuple[int | None, ServedPolicy]
    ) -> dict[str, Any]:
        """The answer to ``record_step`` or ``episode_end`` (the latter once the episode is written)."""
        recording = self.recorder is not None
        if message.kind == STEP:
            step = episode.count
            self._record(episode.add_step(message.obs), policy)
            return {"record_step": True, "step": step, "recording": recording}
        written = self._record(episode.take(message.obs, message.success), policy)
        if written is None:  # not recording, or nothing recorded since the last end
            outcome = OUTCOMES[message.success]
            return {"episode_end": True, "recording": recording, "steps": 0, "outcome": outcome, "file": None}
        return {"episode_end": True, "recording": True, **(await asyncio.wrap_future(written))}

    @staticmethod
    def _version_key(version: int | None) -> dict[str, int]:
        """``{"policy_version": N}`` when a registry is followed (nothing otherwise: openpi's answer as it is)."""
        return {} if version is None else {"policy_version": version}

    async def _handler(self, ws: ServerConnection) -> None:
        """Send the metadata, then answer each frame until the client leaves or errs; with ``--record``,
        keep the connection's open episode and save it when it ends (or, outcome unknown, when the
        connection does). An episode runs on the policy version current when its first frame came, to its end."""
        self.connections += 1
        episode = EpisodeBuffer(self.connections, self.recorder is not None, self.record_max_steps)
        policy: tuple[int | None, ServedPolicy] | None = None  # the open episode's version
        try:
            await ws.send(packb({**self.metadata, **self._version_key(self.source.version)}))
            prev_total_ms: float | None = None
            while True:
                frame = await ws.recv()
                start = time.monotonic()
                if isinstance(frame, str):
                    await self._fail(ws, "bad request: expected a binary msgpack frame, got a text frame")
                    return
                if policy is None:
                    policy = self.source.acquire()
                try:
                    message, reply, infer_s, batch = await asyncio.wrap_future(
                        self.inference.submit(frame, policy[1])
                    )
                    if message.kind != OBSERVATION:
                        answer = await self._control(message, episode, policy)
                        answer.update(self._version_key(policy[0]))
                        if message.kind == END:  # the next episode runs on the version current then
                            self.source.release(policy[0])
                            policy = None
                        await ws.send(packb(answer))
                        continue
                    self._record(episode.add_query(message.obs, reply["actions"]), policy)
                except (BadRequest, WireError) as err:
                    log.info("bad request from %s: %s", ws.remote_address, err)
                    await self._fail(ws, f"bad request: {err}")
                    return
                except Exception as err:  # noqa: BLE001 - reported to the client, logged here
                    log.exception("inference failed")
                    await self._fail(
                        ws, f"server error: {type(err).__name__}: {' '.join(str(err).split())}"[:2000]
                    )
                    return
                timing = {"infer_ms": infer_s * 1000.0, "batch_size": batch}
                if prev_total_ms is not None:
                    timing["prev_total_ms"] = prev_total_ms
                reply["server_timing"] = timing
                reply.update(self._version_key(policy[0]))
                await ws.send(packb(reply))
                self.requests += 1
                prev_total_ms = (time.monotonic() - start) * 1000.0
        except ConnectionClosed:
            return
        finally:
            if policy is not None:
                self._record(episode.take(None, None), policy)  # an episode left open: outcome unknown
                self.source.release(policy[0])

    # ------------------------------------------------------------------ running
    def serve(self) -> Any:
        """The websockets server (an async context manager) on host:port."""
        return serve(
            self._handler, self.host, self.port, compression=None, max_size=self.max_message_bytes,
            process_request=self._process_request,
        )  # fmt: skip

    async def run(self, ready: threading.Event | None = None, stop: asyncio.Future | None = None) -> None:
        """Serve until ``stop`` resolves (forever without one); sets ``self.port`` to the bound port."""
        async with self.serve() as server:
            self._bound(server)
            if ready is not None:
                ready.set()
            if stop is None:
                await server.serve_forever()
            else:
                await stop

    def _bound(self, server: Server) -> None:
        """Record the port actually bound (``--port 0`` picks a free one)."""
        self.port = server.sockets[0].getsockname()[1]

    def close(self) -> None:
        """Stop following the registry and the inference thread, and write the episodes still queued."""
        self.source.close()
        self.inference.close()
        if self.recorder is not None:
            self.recorder.close()


class ServerThread:
    """A ``PolicyServer`` on its own event loop in a daemon thread (tests, benchmarks, notebooks)."""

    def __init__(self, server: PolicyServer):
        self.server = server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Future | None = None
        self._thread = threading.Thread(target=self._main, name="policy-server", daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def _main(self) -> None:
        """The thread's body: a fresh event loop running the server until ``stop``."""
        self._loop = asyncio.new_event_loop()
        self._stop = self._loop.create_future()
        try:
            self._loop.run_until_complete(self.server.run(self._ready, self._stop))
        except BaseException as err:  # noqa: BLE001 - surfaced by start()
            self._error = err
            self._ready.set()
        finally:
            self._loop.close()

    def start(self, timeout: float = 30.0) -> ServerThread:
        """Start serving; returns once the port is bound (``self.server.port``)."""
        self._thread.start()
        if not self._ready.wait(timeout) or self._error is not None:
            raise RuntimeError(f"the policy server did not start: {self._error}")
        return self

    @property
    def url(self) -> str:
        """The server's websocket address."""
        return f"ws://{self.server.host}:{self.server.port}"

    def stop(self) -> None:
        """Close the server and its connections, and join the thread."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(lambda: self._stop.done() or self._stop.set_result(None))
        self._thread.join(timeout=30)
        self.server.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """CLI: load the policy directory and serve it until interrupted."""
    p = argparse.ArgumentParser(
        prog=tool_prog("toolkits.deploy.serve_policy"), description=__doc__.splitlines()[0]
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--policy-dir", help="an exported policy directory (export_policy) or any pi0 one")
    which.add_argument("--registry", help="a policy registry: serve its current version and follow it")
    p.add_argument(
        "--follow-interval", type=float, default=2.0, help="with --registry: seconds between pointer checks"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (0: any free port, printed)")
    p.add_argument("--api-key", default=None, help="require 'Authorization: Api-Key KEY' from clients")
    p.add_argument(
        "--max-message-mb", type=float, default=DEFAULT_MAX_MESSAGE_MB, help="largest request frame"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="noise from this seed and the observation (reproducible answers)",
    )
    p.add_argument(
        "--cameras", nargs="+", default=None, help="camera names in the policy's order (no deploy.json)"
    )
    p.add_argument(
        "--max-batch", type=int, default=DEFAULT_MAX_BATCH, help="requests inferred together at most"
    )
    p.add_argument("--tasks", nargs="+", default=None, help="task names whose prompts the policy knows")
    p.add_argument(
        "--image-keys", nargs="+", default=None, help="request key of each camera's image, in order"
    )
    p.add_argument("--state-key", default=None, help="request key of the state (default observation/state)")
    p.add_argument("--prompt-key", default=None, help="request key of the instruction (default prompt)")
    p.add_argument("--device", default="cpu", help="torch device for inference (cpu, cuda)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads for inference")
    p.add_argument(
        "--record", default=None, metavar="DIR", help="save served episodes there (episode format; appends)"
    )
    p.add_argument(
        "--record-max-steps", type=int, default=DEFAULT_MAX_STEPS, help="longest recorded episode (then cut)"
    )
    args = p.parse_args(argv)
    try:
        check_args(args)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("websockets").setLevel(logging.WARNING)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.api_key:
        log.warning(
            "listening on %s without --api-key: anyone who reaches the port can drive the policy", args.host
        )

    def load(policy_dir: str | Path) -> ServedPolicy:
        return ServedPolicy(
            policy_dir, args.cameras, args.tasks, args.image_keys, args.state_key, args.prompt_key, args.seed,
            args.device,
        )  # fmt: skip

    try:
        if args.registry is not None:
            from toolkits.deploy.registry import PolicyRegistry

            served = RegistryFollower(PolicyRegistry(args.registry), load, args.follow_interval)
        else:
            served = load(args.policy_dir)
        server = PolicyServer(
            served, args.host, args.port, args.api_key, args.max_message_mb, args.max_batch, args.record,
            args.record_max_steps,
        )  # fmt: skip
    except (FileNotFoundError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    async def run() -> None:
        """Serve until SIGINT/SIGTERM, printing the address once bound."""
        loop = asyncio.get_running_loop()
        stop = loop.create_future()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
        ready = threading.Event()
        task = asyncio.ensure_future(server.run(ready, stop))
        while not ready.is_set() and not task.done():
            await asyncio.sleep(0.01)
        if task.done():
            await task  # raises the bind error
        meta = server.metadata
        following = (
            f" (version {server.source.version} of {args.registry}, followed)" if args.registry else ""
        )
        print(
            f"serving {args.policy_dir}{following} on ws://{server.host}:{server.port} (cameras {meta['cameras']} as "
            f"{meta['image_keys']}, state {meta['state_dim']} as {meta['state_key']!r}, chunks of "
            f"{meta['chunk_size']} x {meta['action_dim']} actions)"
            + (f", recording episodes to {args.record}" if args.record else ""),
            flush=True,
        )
        await task

    try:
        asyncio.run(run())
    except OSError as err:  # taken between the check and the bind
        print(bind_error(args.host, args.port, err), file=sys.stderr)
        return 2
    finally:
        server.close()
    recorded = f", episodes recorded: {server.recorder.written} (in {args.record})" if server.recorder else ""
    print(f"stopped after {server.requests} answers and {server.errors} errors{recorded}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
