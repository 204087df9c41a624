"""Atomic writes of small files: written under a sibling temp name and renamed into place, so a run
stopped midway leaves the previous file (or none), never a half-written one."""

from __future__ import annotations

import json
import os
from typing import Any


def write_json_atomically(path: str, data: Any) -> None:
    """``json.dump(data)`` to ``path`` via ``path.tmp`` and a rename."""
    write_text_atomically(path, json.dumps(data, indent=1))


def write_text_atomically(path: str, text: str) -> None:
    """``text`` to ``path`` via ``path.tmp`` and a rename."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
