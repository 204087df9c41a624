"""Stop on SIGTERM at the next step boundary with a checkpoint, so that a job a scheduler preempts or
cancels (SLURM's ``scancel`` and time limit, Kubernetes, ``kill``) resumes exactly with
``runner.resume_dir``; a second SIGTERM, or Ctrl-C, stops at once (workers still shut down).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class JobStopped(RuntimeError):
    """A job stopped on request before ``runner.max_steps``; the message says where to resume from."""

    def __init__(self, signal_name: str, step: int, checkpoint: str | None):
        self.signal_name, self.step, self.checkpoint = signal_name, step, checkpoint
        resume = (
            f"continue with runner.resume_dir={checkpoint}" if checkpoint else "no checkpoint was written"
        )
        super().__init__(f"stopped by {signal_name} after step {step}: {resume}")


class StopRequest:
    """Set by the first SIGTERM; the training loop reads it between steps. A second one interrupts."""

    def __init__(self) -> None:
        self.signal_name: str | None = None

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def handle(self, signum: int, frame: object) -> None:
        """The SIGTERM handler."""
        if self.requested:
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        print(
            "SIGTERM: stopping after the current step with a checkpoint (send it again to stop at once)",
            file=sys.stderr,
            flush=True,
        )


_active: StopRequest | None = None


def reclaim_sigterm() -> None:
    """Put the active request's handler back after a library replaced it: ``ray.init`` installs one that exits at
    once, so a SIGTERM while a job's workers start would end it (a co-evolution between rounds) silently."""
    if _active is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _active.handle)


@contextmanager
def stop_on_sigterm() -> Iterator[StopRequest]:
    """Within the block the first SIGTERM only sets the yielded request. A nested block (a co-evolution round's
    job) shares the outer request and installs its handler again, since ``ray.init`` sets its own (exit at
    once). Outside the main thread, where Python cannot handle signals, the request is never set."""
    global _active
    if threading.current_thread() is not threading.main_thread():
        yield _active or StopRequest()
        return
    if _active is not None:
        outer = _active
        signal.signal(signal.SIGTERM, outer.handle)
        try:
            yield outer
        finally:
            signal.signal(signal.SIGTERM, outer.handle)
        return
    request = StopRequest()
    previous = signal.signal(signal.SIGTERM, request.handle)
    _active = request
    try:
        yield request
    finally:
        _active = None
        signal.signal(signal.SIGTERM, previous)
