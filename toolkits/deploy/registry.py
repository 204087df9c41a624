"""A policy registry: numbered policy directories, immutable once published, and a ``current`` pointer that
moves atomically (publish, rollback); what a server follows and the improver publishes into.

    ROOT/versions/v0001/   a policy directory (config.json, model.safetensors, deploy.json, ...) + manifest.json
    ROOT/CURRENT.json      {"version": 3, "moved": ISO time, "reason": "publish" | "rollback" | "set"}
    ROOT/history.jsonl     every move of the pointer, one JSON line each (the audit trail; rollback reads it)

A version is built in ``ROOT/staging/`` and renamed into ``versions/`` in one step, so it is whole or absent; its
manifest lists each file's SHA-256 (``verify``), its parent version, where it came from and its gate metrics, and its
files are made read-only. The pointer is rewritten by rename. Writers take an exclusive ``flock`` on ``ROOT/.lock``
(released by the kernel when a writer dies, so ``kill -9`` leaves no stale lock); readers take none.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolkits.base.atomic import write_json_atomically

MANIFEST = "manifest.json"
CURRENT = "CURRENT.json"
HISTORY = "history.jsonl"
VERSIONS = "versions"
STAGING = "staging"
VERSION_DIR = re.compile(r"^v(\d{4,})$")


class RegistryError(ValueError):
    """A registry that is not one, a version it does not have, or a request it cannot honour (one line)."""


@dataclass
class Manifest:
    """What a published version is: its number, its parent, where it came from, its gate and its files' digests."""

    version: int
    parent: int | None
    created: str
    source: dict[str, Any] = field(default_factory=dict)  # checkpoint, recipe, data, or the directory copied
    gate: dict[str, Any] = field(default_factory=dict)  # the metrics it was published on
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256

    @classmethod
    def load(cls, path: Path) -> Manifest:
        return cls(**json.loads(path.read_text()))


def version_name(version: int) -> str:
    """The directory name of ``version`` (``v0003``: names sort as numbers do)."""
    return f"v{version:04d}"


def parse_version(text: str | int) -> int:
    """``3``, ``"3"``, ``"v3"`` or ``"v0003"`` as 3; anything else is a ``RegistryError``."""
    match = re.fullmatch(r"v?(\d+)", str(text).strip())
    if match is None or int(match.group(1)) < 1:
        raise RegistryError(f"version {text!r}: a version is a number >= 1 (3, v3 or v0003)")
    return int(match.group(1))


def now() -> str:
    """UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def file_digests(directory: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``directory`` but the manifest, sorted."""
    out = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        out[path.relative_to(directory).as_posix()] = digest.hexdigest()
    return out


def _make_read_only(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


class PolicyRegistry:
    """The versions under ``root`` and its current pointer (``PolicyRegistry.create(root)`` makes a new one)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        if not (self.root / VERSIONS).is_dir():
            raise RegistryError(
                f"--registry={root}: not a policy registry (no {VERSIONS}/); make one with: worldrl registry init "
                f"--registry {root}"
            )

    @classmethod
    def create(cls, root: str | Path) -> PolicyRegistry:
        """A new empty registry at ``root`` (an existing registry is opened as it is; other content refused)."""
        root = Path(root)
        if root.exists() and not (root / VERSIONS).is_dir() and (not root.is_dir() or any(root.iterdir())):
            raise RegistryError(f"--registry={root}: exists and is not a policy registry; choose a new path")
        (root / STAGING).mkdir(parents=True, exist_ok=True)
        (root / VERSIONS).mkdir(exist_ok=True)
        return cls(root)

    # ---- reading (no lock: every file read here is replaced whole, never rewritten in place)

    def versions(self) -> list[int]:
        """Published version numbers, ascending."""
        found = (VERSION_DIR.match(p.name) for p in (self.root / VERSIONS).iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def path(self, version: int) -> Path:
        """The policy directory of ``version``; a ``RegistryError`` naming the versions there when absent."""
        path = self.root / VERSIONS / version_name(version)
        if not (path / MANIFEST).is_file():
            have = ", ".join(str(v) for v in self.versions()) or "none yet"
            raise RegistryError(f"version {version}: not in {self.root} (published: {have})")
        return path

    def manifest(self, version: int) -> Manifest:
        return Manifest.load(self.path(version) / MANIFEST)

    def current(self) -> int | None:
        """The version the pointer names (None before the first publish)."""
        path = self.root / CURRENT
        return int(json.loads(path.read_text())["version"]) if path.is_file() else None

    def current_path(self) -> Path:
        """The policy directory to serve now; a ``RegistryError`` when nothing is published yet."""
        version = self.current()
        if version is None:
            raise RegistryError(f"--registry={self.root}: nothing published yet (worldrl registry publish)")
        return self.path(version)

    def history(self) -> list[dict[str, Any]]:
        """The pointer's moves, oldest first (a line cut by a crash while it was appended is skipped)."""
        path = self.root / HISTORY
        if not path.is_file():
            return []
        moves = []
        for line in path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                moves.append(json.loads(line))
        return moves

    def verify(self, version: int) -> list[str]:
        """What differs between ``version``'s files and its manifest's digests (empty: intact)."""
        listed = self.manifest(version).files
        found = file_digests(self.path(version))
        problems = [f"{name}: missing" for name in listed if name not in found]
        problems += [f"{name}: not in the manifest" for name in found if name not in listed]
        problems += [f"{name}: changed" for name in listed if name in found and found[name] != listed[name]]
        return problems

    # ---- writing (under the lock)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.root / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _move_pointer(self, version: int, reason: str, **extra: Any) -> None:
        move = {"version": version, "moved": now(), "reason": reason, "previous": self.current(), **extra}
        write_json_atomically(str(self.root / CURRENT), move, durable=True)  # under the lock: one writer
        with open(self.root / HISTORY, "a") as f:
            f.write(json.dumps(move) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def publish(
        self,
        write: Callable[[Path], Any],
        source: dict[str, Any] | None = None,
        gate: dict[str, Any] | None = None,
        parent: int | None = None,
        make_current: bool = True,
    ) -> int:
        """A new version: ``write(dir)`` fills a staging directory, which gets its manifest (``parent``: the current
        version unless given) and is renamed into ``versions/`` under the next number; returns that number."""
        (self.root / STAGING).mkdir(exist_ok=True)
        staging = self.root / STAGING / uuid.uuid4().hex
        claim = open(f"{staging}.lock", "a")  # held while this publish lives: clean_staging leaves it alone
        fcntl.flock(claim, fcntl.LOCK_EX)
        staging.mkdir()
        try:
            write(staging)
            if not any(staging.iterdir()):
                raise RegistryError("publish: nothing was written to the new version")
            files = file_digests(staging)
            with self._locked():
                version = max(self.versions(), default=0) + 1
                manifest = Manifest(version, self.current() if parent is None else parent, now(), source or {},
                                    gate or {}, files)  # fmt: skip
                (staging / MANIFEST).write_text(json.dumps(asdict(manifest), indent=1))
                _make_read_only(staging)
                os.rename(staging, self.root / VERSIONS / version_name(version))
                if make_current:
                    self._move_pointer(version, "publish")
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            os.unlink(claim.name)
            claim.close()
        return version

    def publish_directory(self, policy_dir: str | Path, **kwargs: Any) -> int:
        """Publish a copy of an existing policy directory (its path recorded as the source)."""
        policy_dir = Path(policy_dir)
        source = {"policy_dir": str(policy_dir.resolve()), **kwargs.pop("source", {})}

        def copy(dst: Path) -> None:
            shutil.copytree(policy_dir, dst, dirs_exist_ok=True)

        return self.publish(copy, source=source, **kwargs)

    def set_current(self, version: int, reason: str = "set") -> None:
        """Point ``current`` at a published ``version`` (any of them)."""
        with self._locked():
            self.path(version)  # raises when absent
            self._move_pointer(version, reason)

    def rollback(self, to: int | None = None) -> int:
        """Point ``current`` back at ``to``, or (None) at the current version's parent (the version it was improved
        from: rolling back twice goes back two generations); returns the version now current."""
        with self._locked():
            current = self.current()
            if current is None:
                raise RegistryError(f"rollback: {self.root} has nothing published")
            if to is None:
                to = self.manifest(current).parent
                if to is None:
                    raise RegistryError(f"rollback: version {current} has no parent (name one: --to N)")
            self.path(to)
            if to == current:
                raise RegistryError(f"rollback: version {to} is already current")
            self._move_pointer(to, "rollback")
        return to

    def clean_staging(self) -> int:
        """Remove what publishes that died midway left in ``staging/`` (a live publish holds its claim's lock and is
        left alone); returns how many were removed."""
        removed = 0
        for path in (self.root / STAGING).iterdir():
            if not path.is_dir():
                continue
            with open(f"{path}.lock", "a") as claim:
                try:
                    fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its publisher is alive
                shutil.rmtree(path, ignore_errors=True)
                os.unlink(claim.name)
                removed += 1
        return removed
