"""The server's inference thread: it decodes, checks and answers request frames off the event loop, batching the
requests that wait together so concurrent clients share one forward pass (``toolkits/deploy/serve_policy.py``)."""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future

from toolkits.deploy.record import OBSERVATION, Message, parse_message
from toolkits.deploy.served import ServedPolicy
from toolkits.deploy.wire import unpackb

DEFAULT_MAX_BATCH = 8


class InferenceThread:
    """Decodes, checks and answers frames in one worker thread, batching the requests that wait together
    (up to ``max_batch``): the event loop never runs the policy, and concurrent clients share a forward
    pass. A frame that fails decoding or checks fails alone; the others in its batch are answered."""

    def __init__(self, served: ServedPolicy, max_batch: int = DEFAULT_MAX_BATCH):
        if max_batch < 1:
            raise ValueError(f"--max-batch={max_batch}: must be >= 1")
        self.served, self.max_batch = served, max_batch
        self._queue: queue.Queue[tuple[bytes, ServedPolicy, Future] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="inference", daemon=True)
        self._thread.start()

    def submit(self, frame: bytes, served: ServedPolicy | None = None) -> Future:
        """Queue one frame for ``served`` (default: the server's first policy); the future gets ``(message, reply,
        infer_seconds, batch_size)`` or the frame's error (reply and timing only for observations:
        ``record_step`` and ``episode_end`` are not inferred)."""
        future: Future = Future()
        self._queue.put((frame, served or self.served, future))
        return future

    def _run(self) -> None:
        """Take the first waiting frame and whatever else waits (up to ``max_batch``), answer them, repeat."""
        while (item := self._queue.get()) is not None:
            items = [item]
            while len(items) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)  # stop after this batch
                    break
                items.append(nxt)
            self._answer(items)

    def _answer(self, items: list[tuple[bytes, ServedPolicy, Future]]) -> None:
        """Parse each frame (its own error on failure), infer the good observations as one batch per policy
        version, set the futures (control messages are answered without inference)."""
        groups: dict[int, list[tuple[Message, Future]]] = {}
        policies: dict[int, ServedPolicy] = {}
        for frame, served, future in items:
            if not future.set_running_or_notify_cancel():
                continue
            try:
                message = parse_message(served, unpackb(frame))
            except Exception as err:  # noqa: BLE001 - handed to the connection that sent it
                future.set_exception(err)
                continue
            if message.kind == OBSERVATION:
                groups.setdefault(id(served), []).append((message, future))
                policies[id(served)] = served
            else:
                future.set_result((message, None, 0.0, 0))
        for key, parsed in groups.items():
            self._infer(policies[key], parsed)

    def _infer(self, served: ServedPolicy, parsed: list[tuple[Message, Future]]) -> None:
        """One forward pass of ``served`` for the parsed observations; each future gets its chunk or the error."""
        start = time.monotonic()
        try:
            actions = served.act_many([message.obs for message, _ in parsed])
        except Exception as err:  # noqa: BLE001 - every request of the batch gets the error
            for _, future in parsed:
                future.set_exception(err)
            return
        seconds = time.monotonic() - start
        for (message, future), chunk in zip(parsed, actions, strict=True):
            future.set_result((message, {"actions": chunk}, seconds, len(parsed)))

    def close(self, timeout: float = 30.0) -> None:
        """Stop after the batches already queued, and wait for the thread (no forward pass left running while the
        interpreter shuts down)."""
        self._queue.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
