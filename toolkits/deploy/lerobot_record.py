"""Episodes recorded from LeRobot's async-inference protocol (``worldrl serve-lerobot --record DIR``).

LeRobot's ``RobotClient`` sends timestamped observations (``TimedObservation.timestep``) and executes the actions of
the chunks it gets back, each stamped with the timestep it is for; the protocol has no episode. A session's episode
is assembled from them: the observation of timestep t, and the action the server had most recently served for t
when the observation of t+1 arrived (what the client executed, exactly with ``aggregate_fn_name: latest_only``; a
blending aggregate executes a mix of that and older chunks). Recording needs an observation every timestep
(``RobotClient``'s ``chunk_size_threshold: 1.0``); an episode ends

- at an observation whose raw dict carries ``"episode_end": true`` (and ``"success": true | false``, else unknown):
  the final observation, not inferred; a robot's ``get_observation`` can add both keys, the stock client sends them;
- where the timesteps go back or skip, or no action was served for a timestep (saved, outcome unknown; the next
  observation starts a new episode);
- at the client's next ``Ready``, after ``--record-idle`` seconds without a message (the session goes on: its next
  observation begins the next episode), and when the server stops (outcome unknown).

The episodes are written by ``toolkits.deploy.record.EpisodeRecorder``, as ``serve --record`` writes them.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from toolkits.deploy.record import DEFAULT_MAX_STEPS, EpisodeBuffer, PendingEpisode

log = logging.getLogger("toolkits.deploy.lerobot_record")


class TimestepEpisode:
    """One LeRobot session's open episode: its observations by timestep and the actions served for them."""

    def __init__(self, connection: int, max_steps: int = DEFAULT_MAX_STEPS):
        self.buffer = EpisodeBuffer(connection, record=True, max_steps=max_steps)
        # the newest observation (its action not yet known)
        self.last: tuple[int, dict[str, Any]] | None = None
        self.latest: dict[int, np.ndarray] = {}  # timestep -> the newest served action for it

    def served(self, timestep: int, chunk: np.ndarray) -> None:
        """A chunk answered for ``timestep``: its actions are the newest for timesteps t, t+1, ..."""
        for i, action in enumerate(chunk):
            self.latest[timestep + i] = np.asarray(action, dtype=np.float32)

    def observe(self, timestep: int, obs: dict[str, Any]) -> list[PendingEpisode]:
        """The observation of ``timestep`` (a parsed request): the previous one becomes a step with the action
        served for it; returns the episodes this closes (cut at ``max_steps``, or ended by a gap)."""
        closed: list[PendingEpisode | None] = []
        if self.last is not None:
            before, prev = self.last
            if timestep == before + 1 and before in self.latest:
                closed.append(self.buffer.add_query(prev, self.latest[before][None]))
            else:
                why = (
                    "no action was served for it" if timestep == before + 1
                    else f"the next observation is timestep {timestep}"
                )  # fmt: skip
                log.warning(
                    "connection %d: episode ended at timestep %d (%s; recording needs an observation every "
                    "timestep: RobotClient's chunk_size_threshold 1.0)", self.buffer.connection, before, why,
                )  # fmt: skip
                closed.append(self.buffer.take(prev, None))
        self.latest = {t: a for t, a in self.latest.items() if t >= timestep}
        self.last = (timestep, obs)
        return [p for p in closed if p is not None]

    def end(self, success: bool | None) -> PendingEpisode | None:
        """Close the episode with its outcome (``None``: unknown); the newest observation is its final one."""
        final = None if self.last is None else self.last[1]
        self.last, self.latest = None, {}
        return self.buffer.take(final, success)
