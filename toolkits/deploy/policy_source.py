"""Where a server's policy comes from: one policy directory (``FixedPolicy``) or the current version of a policy
registry, followed as it moves (``RegistryFollower``: hot swap between episodes, never inside one).

Each episode acquires the version current when it begins and releases it when it ends, so an episode ends on the
version it began on; a version no episode holds and no longer current is dropped. A new version whose interface
differs from the one served (cameras, image keys or size, state or action size, chunk size) is refused with one log
line and the server goes on with what it serves: clients connected under one interface keep it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolkits.deploy.deploy_checks import policy_dir_deploy_problem
from toolkits.deploy.registry import PolicyRegistry
from toolkits.deploy.served import ServedPolicy

log = logging.getLogger("toolkits.deploy.policy_source")
INTERFACE = ("cameras", "image_keys", "image_size", "state_key", "state_dim", "prompt_key", "action_dim",
             "chunk_size")  # fmt: skip


def interface_mismatch(served: ServedPolicy, new: ServedPolicy) -> str | None:
    """What differs between two policies' interfaces to a client (None: a client of one can use the other)."""
    a, b = served.metadata(), new.metadata()
    diff = [f"{key} {a[key]} -> {b[key]}" for key in INTERFACE if a[key] != b[key]]
    return ", ".join(diff) or None


class FixedPolicy:
    """One policy directory for the server's lifetime (version None)."""

    def __init__(self, served: ServedPolicy):
        self.first, self.version = served, None

    def acquire(self) -> tuple[int | None, ServedPolicy]:
        return None, self.first

    def release(self, version: int | None) -> None:
        pass

    def close(self) -> None:
        pass


class RegistryFollower:
    """The current version of ``registry``, checked every ``interval`` seconds in a watcher thread; a new current
    version is loaded there (``load(policy_dir)``) and served to the episodes that begin after it."""

    def __init__(self, registry: PolicyRegistry, load: Callable[[Path], ServedPolicy], interval: float = 2.0):
        self.registry, self.load, self.interval = registry, load, interval
        path = registry.current_path()  # raises when nothing is published
        self.version = version = registry.current()
        self.first = load(path)
        self.loaded: dict[int, ServedPolicy] = {version: self.first}
        self.holders: dict[int, int] = {version: 0}
        self.swaps = 0
        self.refused: dict[int, str] = {}  # version -> why it was not served
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="registry-follower", daemon=True)
        self._thread.start()

    def acquire(self) -> tuple[int, ServedPolicy]:
        """The version an episode beginning now runs on (held until ``release``)."""
        with self._lock:
            self.holders[self.version] = self.holders.get(self.version, 0) + 1
            return self.version, self.loaded[self.version]

    def release(self, version: int | None) -> None:
        with self._lock:
            if version is None or version not in self.holders:
                return
            self.holders[version] -= 1
            self._drop_unused()

    def _drop_unused(self) -> None:
        for version in [v for v, n in self.holders.items() if n <= 0 and v != self.version]:
            del self.holders[version], self.loaded[version]

    def check(self) -> bool:
        """Follow the pointer once (the watcher's step; tests call it directly); True when the served version
        changed."""
        try:
            version = self.registry.current()
        except (OSError, ValueError) as err:  # a pointer being replaced is whole; anything else is logged
            log.warning("registry %s: cannot read the current version (%s)", self.registry.root, err)
            return False
        if version is None or version == self.version or version in self.refused:
            return False
        try:
            path = self.registry.path(version)
            problem = None if version in self.loaded else policy_dir_deploy_problem(path)
            if problem is not None:
                raise ValueError(problem)
            new = self.loaded.get(version) or self.load(path)
        except Exception as err:  # noqa: BLE001 - a broken version must not stop the server
            self.refused[version] = f"cannot load it: {' '.join(str(err).split())}"
            log.error(
                "registry %s: version %d not served: %s", self.registry.root, version, self.refused[version]
            )
            return False
        mismatch = interface_mismatch(self.first, new)
        if mismatch is not None:
            self.refused[version] = f"its interface differs from the one served ({mismatch})"
            log.error(
                "registry %s: version %d not served: %s", self.registry.root, version, self.refused[version]
            )
            return False
        with self._lock:
            previous, self.version = self.version, version
            self.loaded[version] = new
            self.holders.setdefault(version, 0)
            self.swaps += 1
            self._drop_unused()
        log.info("registry %s: serving version %d (was %d) to episodes that begin now", self.registry.root,
                 version, previous)  # fmt: skip
        return True

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            self.check()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def status(self) -> dict[str, Any]:
        """The served version, the versions still held by open episodes, and the refused ones."""
        with self._lock:
            held = {v: n for v, n in self.holders.items() if n > 0}
        return {"version": self.version, "held": held, "swaps": self.swaps, "refused": dict(self.refused)}
