"""A directory built with directory_written_atomically is whole or absent."""

from __future__ import annotations

import os

import pytest

from toolkits.base.atomic import directory_written_atomically


def test_directory_appears_only_when_the_block_ends(tmp_path):
    dst = str(tmp_path / "out")
    os.makedirs(dst + ".tmp")  # a stale temp directory of an interrupted run
    open(os.path.join(dst + ".tmp", "stale"), "w").close()
    with directory_written_atomically(dst) as tmp:
        assert os.listdir(tmp) == []
        open(os.path.join(tmp, "a"), "w").close()
        assert not os.path.exists(dst)
    assert os.listdir(dst) == ["a"]
    assert not os.path.exists(dst + ".tmp")


def test_a_failure_midway_leaves_nothing(tmp_path):
    dst = str(tmp_path / "out")
    with pytest.raises(RuntimeError, match="midway"), directory_written_atomically(dst) as tmp:
        open(os.path.join(tmp, "a"), "w").close()
        raise RuntimeError("midway")
    assert not os.path.exists(dst) and not os.path.exists(dst + ".tmp")
