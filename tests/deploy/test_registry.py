"""The policy registry: numbered versions, immutable once published, with manifests (parent, source, gate, digests);
the current pointer moves atomically on publish, set-current and rollback; a publisher killed midway (kill -9) leaves
the registry as it was; bad input is one line naming the flag."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pytest

from tests.assets import REPO
from toolkits.deploy.registry import PolicyRegistry, RegistryError, parse_version
from toolkits.deploy.registry_cli import main

POLICY = REPO / "assets" / "metaworld_obs" / "policy"


def fake_policy(directory: Path, tag: str) -> None:
    """A directory with the files a version holds (their content differs by ``tag``)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps({"tag": tag}))
    (directory / "model.safetensors").write_bytes(tag.encode() * 100)


def test_publish_numbers_versions_keeps_manifests_and_moves_the_pointer(tmp_path):
    reg = PolicyRegistry.create(tmp_path / "reg")
    assert reg.current() is None and reg.versions() == []
    v1 = reg.publish(lambda d: fake_policy(d, "a"), source={"recipe": "start"})
    v2 = reg.publish(lambda d: fake_policy(d, "b"), gate={"imagined_success": 0.7})
    v3 = reg.publish(lambda d: fake_policy(d, "c"), make_current=False)
    assert (v1, v2, v3) == (1, 2, 3) and reg.versions() == [1, 2, 3] and reg.current() == 2
    m2 = reg.manifest(2)
    assert (
        m2.parent == 1
        and m2.gate == {"imagined_success": 0.7}
        and set(m2.files)
        == {
            "config.json",
            "model.safetensors",
        }
    )
    assert reg.manifest(1).parent is None and reg.manifest(1).source == {"recipe": "start"}
    assert reg.manifest(3).parent == 2  # a candidate's parent is what was current when it was made
    assert reg.current_path() == tmp_path / "reg" / "versions" / "v0002"
    assert json.loads((reg.current_path() / "config.json").read_text()) == {"tag": "b"}
    # immutable: files are read-only and checked against the manifest's digests
    target = reg.path(1) / "model.safetensors"
    assert not os.access(target, os.W_OK) or os.geteuid() == 0
    assert reg.verify(1) == []
    target.chmod(0o644)
    target.write_bytes(b"tampered")
    (reg.path(1) / "extra.txt").write_text("x")
    assert reg.verify(1) == ["extra.txt: not in the manifest", "model.safetensors: changed"]
    assert [m["version"] for m in reg.history()] == [1, 2]


def test_rollback_goes_to_the_parent_or_any_version_and_the_history_records_it(tmp_path):
    reg = PolicyRegistry.create(tmp_path / "reg")
    for tag in "abc":
        reg.publish(lambda d, tag=tag: fake_policy(d, tag))
    assert reg.current() == 3
    assert reg.rollback() == 2 and reg.current() == 2
    assert reg.rollback() == 1  # again: the parent's parent
    with pytest.raises(RegistryError, match="version 1 has no parent"):
        reg.rollback()
    assert reg.rollback(to=3) == 3
    with pytest.raises(RegistryError, match="version 3 is already current"):
        reg.rollback(to=3)
    with pytest.raises(RegistryError, match=r"version 9: not in .* \(published: 1, 2, 3\)"):
        reg.rollback(to=9)
    reg.set_current(1)
    moves = reg.history()
    assert [(m["version"], m["reason"], m["previous"]) for m in moves] == [
        (1, "publish", None), (2, "publish", 1), (3, "publish", 2), (2, "rollback", 3), (1, "rollback", 2),
        (3, "rollback", 1), (1, "set", 3),
    ]  # fmt: skip


def _publish_slowly(root: str, started: mp.Event) -> None:
    def write(d: Path) -> None:
        fake_policy(d, "slow")
        started.set()
        time.sleep(60)

    PolicyRegistry(root).publish(write)


def test_a_publisher_killed_midway_leaves_the_registry_as_it_was(tmp_path):
    reg = PolicyRegistry.create(tmp_path / "reg")
    reg.publish(lambda d: fake_policy(d, "a"))
    ctx = mp.get_context("spawn")
    started = ctx.Event()
    proc = ctx.Process(target=_publish_slowly, args=(str(reg.root), started))
    proc.start()
    assert started.wait(60)
    assert reg.clean_staging() == 0  # a live publish is left alone
    reg.publish(lambda d: fake_policy(d, "b"))  # publishing goes on beside it
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert reg.versions() == [1, 2] and reg.current() == 2 and reg.verify(1) == [] == reg.verify(2)
    assert reg.clean_staging() == 1 and not any((reg.root / "staging").iterdir())
    assert reg.publish(lambda d: fake_policy(d, "c")) == 3


def test_cli_publishes_lists_shows_rolls_back_and_verifies(tmp_path, capsys):
    root = str(tmp_path / "reg")
    assert main(["init", "--registry", root]) == 0
    assert (
        main(["publish", "--registry", root, "--policy-dir", str(POLICY), "--note", "the shipped start"]) == 0
    )
    assert main(["publish", "--registry", root, "--policy-dir", str(POLICY)]) == 0
    assert "as version 2" in capsys.readouterr().out
    assert main(["list", "--registry", root]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split()[:4] for line in listing] == [["1", "parent", "-", listing[0].split()[3]],
                                                      ["*", "2", "parent", "1"]]  # fmt: skip
    assert main(["show", "--registry", root, "--version", "v1"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["source"]["note"] == "the shipped start" and shown["current"] is False
    assert main(["rollback", "--registry", root]) == 0
    assert "current is version 1 (was 2)" in capsys.readouterr().out
    assert main(["verify", "--registry", root]) == 0
    assert "2 version(s) match" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["list", "--registry", "{tmp}/none"], "not a policy registry (no versions/); make one with"),
        (["publish", "--registry", "{reg}", "--policy-dir", "{tmp}/none"], "--policy-dir="),
        (["rollback", "--registry", "{reg}", "--to", "two"], "version 'two': a version is a number >= 1"),
        (["set-current", "--registry", "{reg}", "--version", "4"], "version 4: not in"),
        (["show", "--registry", "{reg}"], "nothing published yet"),
        (["init", "--registry", "{file}"], "exists and is not a policy registry"),
    ],
)
def test_bad_input_is_one_line_naming_it(tmp_path, capsys, argv, expected):
    reg = PolicyRegistry.create(tmp_path / "reg")
    (tmp_path / "file").write_text("x")
    fill = {"tmp": str(tmp_path), "reg": str(reg.root), "file": str(tmp_path / "file")}
    assert main([a.format(**fill) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err


def test_parse_version():
    assert parse_version("v0003") == parse_version("3") == parse_version(3) == 3
    with pytest.raises(RegistryError):
        parse_version("v0")
