"""Atomic writes: files and directories are built under a sibling temp name and renamed into place, so a run
stopped midway leaves the previous result (or none), never a half-written one."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def write_json_atomically(path: str, data: Any, durable: bool = False) -> None:
    """``json.dump(data)`` to ``path`` via ``path.tmp`` and a rename (``durable``: fsynced before the rename)."""
    write_text_atomically(path, json.dumps(data, indent=1), durable)


def write_text_atomically(path: str, text: str, durable: bool = False) -> None:
    """``text`` to ``path`` via ``path.tmp`` and a rename; ``durable`` flushes it to the disk first, so a machine
    that stops (not only a process) still finds the old file or the new one."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


@contextmanager
def directory_written_atomically(dst: str) -> Iterator[str]:
    """Yield an empty sibling ``dst.tmp`` (a stale one from an interrupted run removed) to build a new directory in;
    it becomes ``dst`` when the block ends and is removed if the block raises, so ``dst`` is whole or absent.
    ``dst`` must not exist (callers refuse it before any work)."""
    dst = dst.rstrip("/")
    tmp = dst + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.replace(tmp, dst)
