"""What a policy server serves, recorded as episodes in the project's episode format (``--record DIR``).

Besides observations, a client may send two small messages (binary msgpack maps, e.g. through openpi's
``WebsocketClientPolicy.infer``, which sends any dict and returns the answer map):

- ``{"record_step": true, <observation keys>}``: the observation after the robot executed one more
  action of its current chunk, when it goes on executing that chunk without a new query (what
  ``ActionChunkBroker`` does between queries). Parsed like an observation, not inferred; recorded as the
  step that executes the chunk's next action. Answer ``{"record_step": true, "step": t, "recording": bool}``.
- ``{"episode_end": true, "success": true | false | null, [<observation keys>]}``: the episode is over
  with that outcome (null: unknown); the observation keys, when sent, carry the final observation.
  Answered once the episode and ``index.json`` are on disk: ``{"episode_end": true, "recording": bool,
  "steps": T, "outcome": "success" | "failure" | "unknown", "file": "episodes/episode_N.h5" | null}``.

Each connection has its own episode. An observation answered with a chunk is a step executing the
chunk's first action; each ``record_step`` after it executes the next one, so actions line up with
observations as in ``toolkits.collect_episodes`` (T actions, T+1 observations; without a final
observation the last action, whose result was not seen, is dropped). A client that queries every step
needs no ``record_step``. A connection that closes with an episode open (no outcome sent, or after an
error) saves it with outcome unknown: ``success_once`` null, ``outcome`` "unknown". An episode reaching
``max_steps`` is saved (outcome unknown) and the next step starts a new one. Episodes with no action
are not saved. Writes run in one writer thread, each file atomically, ``index.json`` rewritten
atomically after every episode; a directory that already holds episodes is appended to.
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolkits.deploy.served import BadRequest, ServedPolicy
from toolkits.episodes import Episode, EpisodeWriter

log = logging.getLogger("toolkits.deploy.record")
EPISODE_END = "episode_end"
RECORD_STEP = "record_step"
DEFAULT_MAX_STEPS = 10_000
OBSERVATION, STEP, END = "observation", RECORD_STEP, EPISODE_END  # message kinds
OUTCOMES = {True: "success", False: "failure", None: "unknown"}


@dataclass
class Message:
    """A decoded request: an observation to answer, a step to record, or the end of an episode."""

    kind: str  # OBSERVATION, STEP or END
    obs: dict[str, Any] | None  # the parsed observation (None: an episode end without a final one)
    success: bool | None = None  # END only: the outcome the client reported (None: unknown)


def _true_flag(msg: dict, key: str) -> None:
    """``msg[key]`` must be true (the marker of a control message)."""
    value = msg[key]
    if not (value is True or (isinstance(value, np.bool_) and bool(value))):
        raise BadRequest(f"{key}: expected true, got {value!r}"[:200])


def parse_message(served: ServedPolicy, msg: Any) -> Message:
    """Classify and check a decoded request; every problem is a one-line ``BadRequest``."""
    if isinstance(msg, dict) and EPISODE_END in msg:
        _true_flag(msg, EPISODE_END)
        if "success" not in msg:
            raise BadRequest(f"{EPISODE_END}: missing key 'success' (allowed: true, false, null for unknown)")
        success = msg["success"]
        if not (success is None or isinstance(success, bool | np.bool_)):
            shown = repr(success)[:100]
            raise BadRequest(
                f"{EPISODE_END}: success={shown} is a {type(success).__name__} (allowed: true, false, null)"
            )
        keys = served.keys
        final = served.parse(msg) if any(k in msg for k in (*keys.images, keys.state)) else None
        return Message(END, final, None if success is None else bool(success))
    if isinstance(msg, dict) and RECORD_STEP in msg:
        _true_flag(msg, RECORD_STEP)
        return Message(STEP, served.parse(msg))
    return Message(OBSERVATION, served.parse(msg))


@dataclass
class PendingEpisode:
    """One episode as a connection collected it, handed to the writer thread to become an ``Episode``."""

    images: list[np.ndarray]  # uint8 [V, S, S, 3] per observation
    states: list[np.ndarray]  # float32 [state_dim] per observation
    actions: list[np.ndarray]  # float32 [action_dim]: the action executed after each observation
    prompt: str
    final: tuple[np.ndarray, np.ndarray] | None  # the observation after the last action, if known
    success: bool | None
    connection: int
    started: float
    ended: float = field(default_factory=time.time)
    policy_version: int | None = None  # the registry version that acted (None: one directory served)
    policy_dir: str | None = None

    def steps(self) -> int:
        """T: the actions whose resulting observation is known."""
        return len(self.actions) if self.final is not None else max(0, len(self.actions) - 1)


class EpisodeBuffer:
    """One connection's open episode: the chunk it executes, and (when recording) every observation
    with the action executed after it."""

    def __init__(self, connection: int, record: bool, max_steps: int = DEFAULT_MAX_STEPS):
        if max_steps < 1:
            raise ValueError(f"--record-max-steps={max_steps}: must be >= 1")
        self.connection, self.record, self.max_steps = connection, record, max_steps
        self.chunk: np.ndarray | None = None
        self.next_action = 0  # index in ``chunk`` of the action the next step executes
        self.count = 0  # steps of the open episode (recorded or not)
        self._clear()

    def _clear(self) -> None:
        """Start an empty episode."""
        self.images: list[np.ndarray] = []
        self.states: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.prompt: str | None = None
        self.started = time.time()
        self.count = 0

    def add_query(self, obs: dict[str, Any], chunk: np.ndarray) -> PendingEpisode | None:
        """An answered observation: a step executing ``chunk[0]``; returns an episode cut at ``max_steps``."""
        self.chunk, self.next_action = chunk, 0
        return self._add(obs)

    def add_step(self, obs: dict[str, Any]) -> PendingEpisode | None:
        """A ``record_step`` observation: a step executing the chunk's next action."""
        if self.chunk is None:
            raise BadRequest(
                f"{RECORD_STEP}: no action chunk to continue (send an observation first, and after each {EPISODE_END})"
            )
        if self.next_action >= len(self.chunk):
            raise BadRequest(
                f"{RECORD_STEP}: all {len(self.chunk)} actions of the chunk were executed; send an observation "
                "for a new chunk"
            )
        return self._add(obs)

    def _add(self, obs: dict[str, Any]) -> PendingEpisode | None:
        """Record ``obs`` with the action executed after it (cutting the episode at ``max_steps``)."""
        assert self.chunk is not None
        action = self.chunk[self.next_action]
        self.next_action += 1
        cut = None
        if self.record and len(self.actions) >= self.max_steps:
            cut = self.take(obs, None, keep_chunk=True)
            log.warning(
                "connection %d: episode cut at %d steps (--record-max-steps)", self.connection, self.max_steps
            )
        if self.record:
            if self.prompt is None:
                self.prompt, self.started = obs["prompt"][0], time.time()
            self.images.append(obs["images"][0].numpy())
            self.states.append(obs["state"][0].numpy())
            self.actions.append(np.asarray(action, dtype=np.float32))
        self.count += 1
        return cut

    def take(
        self, final: dict[str, Any] | None, success: bool | None, keep_chunk: bool = False
    ) -> PendingEpisode | None:
        """Close the open episode (``final``: the observation after its last action); ``None`` when nothing
        was recorded. Without ``keep_chunk`` the next episode must start with an observation."""
        pending = None
        if self.record and self.actions:
            last = None if final is None else (final["images"][0].numpy(), final["state"][0].numpy())
            pending = PendingEpisode(
                self.images, self.states, self.actions, self.prompt or "", last, success, self.connection,
                self.started,
            )  # fmt: skip
        if not keep_chunk:
            self.chunk, self.next_action = None, 0
        self._clear()
        return pending


class EpisodeRecorder:
    """Writes finished episodes into a dataset directory from one writer thread (never the event loop)."""

    def __init__(
        self, root: str, served: ServedPolicy, source: str = "toolkits.deploy.serve_policy --record"
    ):
        spec = served.spec
        self.root = root
        self.policy_dir = str(served.policy_dir)
        self.cameras, self.image_size = list(spec.cameras), spec.image_size
        self.tasks = {text: task for task, text in spec.prompts.items()}  # instruction -> task name
        self.task_ids = {task: i for i, task in enumerate(spec.prompts)}
        self.noise_seed = served.seed
        info = {
            "source": source, "policy_dir": self.policy_dir,
            "cameras": self.cameras, "image_size": self.image_size, "state_dim": spec.state_dim,
            "action_dim": spec.action_dim, "chunk_size": spec.chunk_size, "image_keys": list(served.keys.images),
            "tasks": list(spec.prompts),
        }  # fmt: skip
        try:
            self.writer = EpisodeWriter(root, info, append=True)
        except OSError as err:
            raise ValueError(f"--record={root}: cannot write there ({err.strerror or err})") from None
        except json.JSONDecodeError as err:
            raise ValueError(f"--record={root}: its index.json is not valid JSON ({err})") from None
        have = self.writer.index["info"]
        for key in ("cameras", "image_size", "state_dim", "action_dim"):
            if key in have and have[key] != info[key]:
                raise ValueError(
                    f"--record={root}: holds episodes with {key}={have[key]}, this policy has {info[key]}; "
                    "record into a new directory"
                )
        for rel in self.writer.adopted:  # written before a crash, not yet indexed
            log.warning("%s: recorded before the last stop, added to %s/index.json", rel, root)
        self.writer.close(self.summary())  # a readable (maybe empty) dataset from the start
        self.written = 0
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="recorder")

    def submit(
        self, pending: PendingEpisode | None, version: int | None = None, served: ServedPolicy | None = None
    ) -> Future:
        """Queue an episode for writing, named by the registry ``version`` and policy ``served`` that acted (when
        given); the future gets ``{"steps", "outcome", "file"}`` (file None when the episode had no action to save)."""
        if pending is not None and served is not None:
            pending.policy_version, pending.policy_dir = version, str(served.policy_dir)
        future = self._pool.submit(self._write, pending)
        future.add_done_callback(_log_failure)
        return future

    def _write(self, pending: PendingEpisode | None) -> dict[str, Any]:
        """The writer thread: build the ``Episode``, write its file, then the index (both atomically)."""
        if pending is None or pending.steps() < 1:
            outcome = OUTCOMES[None if pending is None else pending.success]
            return {"steps": 0, "outcome": outcome, "file": None}
        episode = self.episode(pending)
        rel = self.writer.write(episode)
        self.writer.close(self.summary())
        self.written += 1
        log.info("recorded %s: %d steps, %s", rel, episode.length, episode.meta["outcome"])
        return {"steps": episode.length, "outcome": episode.meta["outcome"], "file": rel}

    def episode(self, p: PendingEpisode) -> Episode:
        """The episode-format ``Episode`` of a pending one: T actions, T+1 observations, the outcome."""
        t = p.steps()
        images, states = p.images[: t + 1], p.states[: t + 1]
        if p.final is not None:
            images, states = [*images, p.final[0]], [*states, p.final[1]]
        success = np.zeros(t, dtype=bool)
        success[-1] = bool(p.success)
        task = self.tasks.get(p.prompt, p.prompt)
        meta = {
            "prompt": p.prompt, "task": task, "task_id": self.task_ids.get(task), "cameras": self.cameras,
            "image_size": self.image_size, "success_once": p.success, "outcome": OUTCOMES[p.success],
            "policy": f"served {p.policy_dir or self.policy_dir}", "policy_version": p.policy_version,
            "noise_seed": self.noise_seed, "connection": p.connection, "final_observation": p.final is not None,
            "started": p.started, "ended": p.ended,
        }  # fmt: skip
        return Episode(
            np.stack(images), np.stack(states).astype(np.float32), np.stack(p.actions[:t]),
            success.astype(np.float32), success, meta,
        )  # fmt: skip

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per task: episodes, successes, failures, unknown outcomes and the success rate of known ones."""
        rows: dict[str, dict[str, Any]] = {}
        for entry in self.writer.index["episodes"]:
            row = rows.setdefault(entry["task"], {"episodes": 0, "success": 0, "failure": 0, "unknown": 0})
            row["episodes"] += 1
            row[entry.get("outcome") or OUTCOMES[entry.get("success_once")]] += 1
        for row in rows.values():
            known = row["success"] + row["failure"]
            row["success_rate"] = row["success"] / known if known else None
        return rows

    def close(self) -> None:
        """Wait for the queued episodes to be written."""
        self._pool.shutdown(wait=True)


def _log_failure(future: Future) -> None:
    """A write that failed is logged (an ``episode_end`` also reports it to its client)."""
    if not future.cancelled() and future.exception() is not None:
        log.error("could not record an episode: %s", future.exception())
