"""Serve a policy directory (or a registry's current version) over LeRobot's async-inference protocol: the gRPC
``PolicyServer`` that LeRobot's ``RobotClient`` talks to, which aggregates the returned action chunks on the robot.

    worldrl serve-lerobot --policy-dir DIR [--host 127.0.0.1] [--port 8080] [--fps 30] [--seed 0]
    worldrl serve-lerobot --registry ROOT [--follow-interval 2] [...]
    worldrl serve-lerobot ... --record DIR [--record-max-steps 10000] [--record-idle 30]

The robot's client sends a ``RemotePolicyConfig`` (``policy_type`` pi0 or pi05; its ``pretrained_name_or_path`` is
only logged: the policy is the one this server was started with, nothing is downloaded), then its raw observations
(``TimedObservation``: each camera's HWC uint8 frame under the camera's name, one float per joint, ``"task"``);
``GetActions`` answers the latest one with ``actions_per_chunk`` ``TimedAction`` (timestep t+i, timestamp + i/fps).
The features the client declares (``lerobot_features``: ``observation.state`` names and ``observation.images.<cam>``,
renamed by ``rename_map``) are checked against the policy's ``deploy.json`` when it connects: the state's length,
the number of cameras and, where the names match the policy's cameras, their order; a mismatch is refused with one
line (gRPC INVALID_ARGUMENT) before any observation. As LeRobot's server does, an observation is skipped when its
timestep was answered already or its state is within 1.0 (L2) of the last answered one, unless it is ``must_go``.
``--record DIR`` saves each session's episode in the project's episode format, every observation with the action
served for its timestep (``toolkits/deploy/lerobot_record.py``: where episodes begin and end, the outcome keys).

Pickles from the network are read by ``lerobot_wire.safe_loads`` (LeRobot's dataclasses, numpy arrays, tensors; no
other class), unlike LeRobot's own server, which unpickles whatever arrives. Each client (its connection) has its
own state and keeps the registry version it started on until it sends ``Ready`` again (a new session). The
transport is gRPC without TLS, as LeRobot's: serve on 127.0.0.1 or a trusted network.
"""

from __future__ import annotations

import argparse
import logging
import queue
import signal
import sys
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np

from toolkits.deploy import lerobot_wire as wire
from toolkits.deploy.lerobot_record import TimestepEpisode
from toolkits.deploy.record import DEFAULT_MAX_STEPS, EpisodeRecorder, PendingEpisode
from toolkits.deploy.served import BadRequest, ServedPolicy

log = logging.getLogger("worldrl.serve_lerobot")
POLICY_TYPES = ("pi0", "pi05")


@dataclass
class Session:
    """One client's state between ``Ready`` calls: its setup, the policy version it uses, its latest observation."""

    setup: wire.RemotePolicyConfig | None = None
    version: int | None = None
    served: ServedPolicy | None = None
    state_names: list[str] = field(default_factory=list)
    cameras: list[str] = field(default_factory=list)  # the robot's camera keys, in the policy's camera order
    observations: queue.Queue = field(default_factory=lambda: queue.Queue(maxsize=1))
    answered: set[int] = field(default_factory=set)
    last_state: np.ndarray | None = None
    episode: TimestepEpisode | None = None  # with --record: the open episode
    lock: threading.Lock = field(default_factory=threading.Lock)  # the episode's (two RPC threads touch it)
    touched: float = field(default_factory=time.monotonic)  # the last message


def check_features(setup: wire.RemotePolicyConfig, served: ServedPolicy) -> tuple[list[str], list[str]]:
    """(state names, camera keys in the policy's order) of the client's features, checked against the policy."""
    spec = served.spec
    if setup.policy_type not in POLICY_TYPES:
        raise BadRequest(f"policy_type={setup.policy_type!r}: this server serves {list(POLICY_TYPES)}")
    features = {setup.rename_map.get(k, k): v for k, v in (setup.lerobot_features or {}).items()}
    state = features.get("observation.state")
    if not isinstance(state, dict) or not isinstance(state.get("names"), list | tuple):
        raise BadRequest(
            "lerobot_features: no observation.state with its names (hw_to_dataset_features' form)"
        )
    names = [str(n) for n in state["names"]]
    if len(names) != spec.state_dim:
        raise BadRequest(
            f"lerobot_features observation.state: {len(names)} numbers {names[:8]}; the policy reads "
            f"{spec.state_dim} ({spec.state_type})"
        )
    cams = [k.removeprefix("observation.images.") for k in features if k.startswith("observation.images.")]
    if len(cams) != len(spec.cameras):
        raise BadRequest(
            f"lerobot_features cameras {cams}: the policy reads {len(spec.cameras)} ({spec.cameras})"
        )
    if set(cams) == set(spec.cameras):
        cams = list(spec.cameras)  # by name
    elif set(cams) & set(spec.cameras):
        raise BadRequest(f"lerobot_features cameras {cams}: some but not all are the policy's {spec.cameras}")
    inverse = {v: k for k, v in setup.rename_map.items()}
    raw = [inverse.get(f"observation.images.{c}", f"observation.images.{c}").removeprefix("observation.images.")
           for c in cams]  # fmt: skip
    return names, raw


def episode_end(obs: dict[str, Any]) -> tuple[bool, bool | None]:
    """(whether the raw observation ends its episode, the outcome it reports) from its ``episode_end`` and
    ``success`` keys (``toolkits/deploy/lerobot_record.py``)."""
    end, success = obs.get("episode_end", False), obs.get("success")
    if not isinstance(end, bool | np.bool_):
        raise BadRequest(f"observation episode_end={end!r}: true or false")
    if success is not None and not isinstance(success, bool | np.bool_):
        raise BadRequest(f"observation success={success!r}: true, false or absent (unknown)")
    return bool(end), None if success is None else bool(success)


def to_request(obs: dict[str, Any], session: Session) -> dict[str, Any]:
    """A raw LeRobot observation -> the served policy's request map (its image, state and prompt keys)."""
    keys = session.served.keys
    missing = [k for k in (*session.state_names, *session.cameras, "task") if k not in obs]
    if missing:
        raise BadRequest(f"observation without {missing[:6]} (declared in lerobot_features)")
    try:
        state = np.array([float(obs[n]) for n in session.state_names], dtype=np.float32)
    except (TypeError, ValueError):
        raise BadRequest(f"observation state {session.state_names[:6]}: one number per name") from None
    request = {image_key: obs[cam] for image_key, cam in zip(keys.images, session.cameras, strict=True)}
    return request | {keys.state: state, keys.prompt: obs["task"]}


class AsyncInferenceServicer:
    """The four methods of ``transport.AsyncInference`` over a policy source (``FixedPolicy`` or
    ``RegistryFollower``: ``acquire`` / ``release`` a version)."""

    def __init__(
        self, source: Any, fps: float = 30.0, obs_timeout: float = 2.0, max_message_mb: float = 16,
        recorder: EpisodeRecorder | None = None, record_max_steps: int = DEFAULT_MAX_STEPS,
    ):  # fmt: skip
        self.source, self.dt, self.obs_timeout = source, 1.0 / fps, obs_timeout
        self.limit = int(max_message_mb * 1024 * 1024)
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()
        self.recorder, self.record_max_steps = recorder, record_max_steps
        self.connections = 0  # sessions begun (each numbers its recorded episodes)

    def session(self, context: grpc.ServicerContext) -> Session:
        with self.lock:
            session = self.sessions.setdefault(context.peer(), Session())
        session.touched = time.monotonic()
        return session

    def _record(self, pending: PendingEpisode | None, session: Session) -> None:
        """Hand a closed episode, named by the version that acted, to the recorder's writer thread."""
        if self.recorder is not None and pending is not None and session.served is not None:
            self.recorder.submit(pending, session.version, session.served)

    def _end(self, session: Session) -> None:
        """The session's open episode saved (outcome unknown) and its version released."""
        with session.lock:  # checked under the lock: end_idle or the session's own call may be closing it
            if session.episode is not None:
                self._record(session.episode.end(None), session)
                session.episode = None
        if session.served is not None:
            self.source.release(session.version)
            session.served = None

    def end_idle(self, idle_s: float) -> None:
        """Save the open episode of every session silent for ``idle_s`` seconds (a client gone, or paused between
        episodes: the session stays for its return)."""
        now = time.monotonic()
        with self.lock:
            sessions = list(self.sessions.values())
        for session in sessions:
            with session.lock:
                if session.episode is not None and now - session.touched > idle_s:
                    self._record(session.episode.end(None), session)

    def close(self) -> None:
        """End every session (their episodes saved, their versions released) and wait for the recorder's writes."""
        with self.lock:
            sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            self._end(session)
        if self.recorder is not None:
            self.recorder.close()

    def Ready(self, request: Any, context: grpc.ServicerContext) -> Any:
        """A new session for this client: its previous version released, its queue and timesteps cleared."""
        with self.lock:
            old = self.sessions.pop(context.peer(), None)
        if old is not None:
            self._end(old)
        self.session(context)
        return wire.Empty()

    def SendPolicyInstructions(self, request: Any, context: grpc.ServicerContext) -> Any:
        session = self.session(context)
        try:
            setup = wire.safe_loads(request.data)
            if not isinstance(setup, wire.RemotePolicyConfig):
                raise BadRequest(f"PolicySetup: expected a RemotePolicyConfig, got {type(setup).__name__}")
            self._end(session)
            session.version, session.served = self.source.acquire()
            try:
                session.state_names, session.cameras = check_features(setup, session.served)
            except BadRequest:
                self._end(session)
                raise
        except (BadRequest, wire.WireError) as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        session.setup = setup
        if self.recorder is not None:
            with self.lock:
                self.connections += 1
                session.episode = TimestepEpisode(self.connections, self.record_max_steps)
        log.info("client %s: %s %r, %d actions a chunk, served by %s (version %s)", context.peer(), setup.policy_type,
                 setup.pretrained_name_or_path, setup.actions_per_chunk, session.served.policy_dir, session.version)  # fmt: skip
        return wire.Empty()

    def SendObservations(self, request_iterator: Any, context: grpc.ServicerContext) -> Any:
        session = self.session(context)
        try:
            payload = wire.joined(request_iterator, self.limit)
            if payload is None:
                return wire.Empty()
            timed = wire.safe_loads(payload)
            if not isinstance(timed, wire.TimedObservation) or not isinstance(timed.observation, dict):
                raise BadRequest(f"Observation: expected a TimedObservation, got {type(timed).__name__}")
            if session.served is None:
                raise BadRequest("an observation before SendPolicyInstructions")
            request = session.served.parse(to_request(timed.observation, session))
            end, success = episode_end(timed.observation)
        except (BadRequest, wire.WireError) as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        with session.lock:
            if session.episode is not None:
                for closed in session.episode.observe(int(timed.timestep), request):
                    self._record(closed, session)
                if end:
                    self._record(session.episode.end(success), session)
        if end:  # the final observation of an episode: nothing to act on
            return wire.Empty()
        state = request["state"][0].numpy()
        similar = session.last_state is not None and float(np.linalg.norm(state - session.last_state)) < 1.0
        if (
            timed.must_go
            or session.last_state is None
            or (timed.timestep not in session.answered and not similar)
        ):
            try:
                session.observations.get_nowait()  # only the latest waits
            except queue.Empty:
                pass
            session.observations.put((timed, request))
        return wire.Empty()

    def GetActions(self, request: Any, context: grpc.ServicerContext) -> Any:
        session = self.session(context)
        try:
            timed, batch = session.observations.get(timeout=self.obs_timeout)
        except queue.Empty:
            return wire.Actions()  # nothing to answer (LeRobot's server answers an empty message too)
        import torch

        chunk = session.served.act(batch)[: max(1, session.setup.actions_per_chunk)]
        session.answered.add(timed.timestep)
        with session.lock:
            if session.episode is not None:
                session.episode.served(int(timed.timestep), chunk)
        session.last_state = batch["state"][0].numpy()
        actions = [
            wire.TimedAction(timed.timestamp + i * self.dt, timed.timestep + i, torch.from_numpy(a.copy()))
            for i, a in enumerate(chunk)
        ]
        return wire.Actions(data=wire.dumps(actions))


def recorder_for(root: str, source: Any) -> EpisodeRecorder:
    """``--record``'s recorder into ``root`` for the policies ``source`` serves (its current one's interface)."""
    version, served = source.acquire()
    source.release(version)
    return EpisodeRecorder(root, served, source="worldrl serve-lerobot --record")


def handler(servicer: AsyncInferenceServicer) -> grpc.GenericRpcHandler:
    """The gRPC handlers of ``transport.AsyncInference`` (no generated code: the messages' own (de)serialisers)."""
    ser = lambda m: m.SerializeToString()  # noqa: E731
    methods = {
        "Ready": grpc.unary_unary_rpc_method_handler(servicer.Ready, wire.Empty.FromString, ser),
        "SendPolicyInstructions": grpc.unary_unary_rpc_method_handler(
            servicer.SendPolicyInstructions, wire.PolicySetup.FromString, ser
        ),
        "SendObservations": grpc.stream_unary_rpc_method_handler(
            servicer.SendObservations, wire.Observation.FromString, ser
        ),
        "GetActions": grpc.unary_unary_rpc_method_handler(servicer.GetActions, wire.Empty.FromString, ser),
    }
    return grpc.method_handlers_generic_handler(f"{wire.PACKAGE}.{wire.SERVICE}", methods)


def start_server(
    servicer: AsyncInferenceServicer, host: str, port: int, workers: int = 8
) -> tuple[grpc.Server, int]:
    """A started gRPC server on ``host:port`` (0: any free port); (server, port)."""
    mb = servicer.limit + 1024 * 1024
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                         options=[("grpc.max_receive_message_length", mb), ("grpc.max_send_message_length", mb)])  # fmt: skip
    server.add_generic_rpc_handlers((handler(servicer),))
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    server.start()
    return server, bound


def main(argv: list[str] | None = None) -> int:
    """CLI: check the flags and the policy, then serve until Ctrl-C / SIGTERM."""
    from toolkits.deploy.policy_source import FixedPolicy, RegistryFollower
    from toolkits.deploy.registry import PolicyRegistry, RegistryError

    p = argparse.ArgumentParser(prog="worldrl serve-lerobot", description=__doc__.splitlines()[0])
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--policy-dir", help="a policy directory (export_policy)")
    which.add_argument("--registry", help="a policy registry: serve its current version and follow it")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument(
        "--port", type=int, default=8080, help="TCP port (LeRobot's default 8080; 0: any free port)"
    )
    p.add_argument("--fps", type=float, default=30.0, help="the robot's control rate: actions' timestamps")
    p.add_argument(
        "--seed", type=int, default=None, help="noise from the seed and the observation (reproducible)"
    )
    p.add_argument("--follow-interval", type=float, default=2.0)
    p.add_argument("--max-message-mb", type=float, default=16.0)
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--record", default=None, metavar="DIR", help="save each session's episode there (appends)"
    )
    p.add_argument("--record-max-steps", type=int, default=DEFAULT_MAX_STEPS, help="longest recorded episode")
    p.add_argument(
        "--record-idle", type=float, default=30.0, help="seconds of silence that end a session's episode"
    )
    args = p.parse_args(argv)
    for flag, value in (("--fps", args.fps), ("--max-message-mb", args.max_message_mb),
                        ("--follow-interval", args.follow_interval), ("--record-idle", args.record_idle)):  # fmt: skip
        if value <= 0:
            p.error(f"{flag}={value}: must be > 0")
    if not 0 <= args.port <= 65535:
        p.error(f"--port={args.port}: must be 0..65535")
    if args.record_max_steps < 1:
        p.error(f"--record-max-steps={args.record_max_steps}: must be >= 1")
    load = lambda d: ServedPolicy(d, seed=args.seed, device=args.device)  # noqa: E731
    try:
        if args.registry:
            source: Any = RegistryFollower(PolicyRegistry(args.registry), load, args.follow_interval)
        else:
            source = FixedPolicy(load(args.policy_dir))
        recorder = recorder_for(args.record, source) if args.record else None
    except (RegistryError, ValueError, OSError) as err:
        p.error(" ".join(str(err).split()))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    servicer = AsyncInferenceServicer(
        source, args.fps, max_message_mb=args.max_message_mb, recorder=recorder,
        record_max_steps=args.record_max_steps,
    )  # fmt: skip
    server, port = start_server(servicer, args.host, args.port)
    print(f"serving LeRobot async inference on {args.host}:{port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            servicer.end_idle(args.record_idle)
    except KeyboardInterrupt:
        pass
    server.stop(grace=2).wait()
    servicer.close()
    source.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
