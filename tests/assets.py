"""Checks of the models shipped under assets/ (each folder lists its files in SHA256SUMS)."""

import hashlib
from pathlib import Path


def assert_matches_sha256sums(root: Path) -> int:
    """Every file ``root/SHA256SUMS`` lists has its digest; returns how many files it lists."""
    lines = (root / "SHA256SUMS").read_text().splitlines()
    for line in lines:
        digest, name = line.split()
        assert hashlib.sha256((root / name).read_bytes()).hexdigest() == digest, name
    return len(lines)
