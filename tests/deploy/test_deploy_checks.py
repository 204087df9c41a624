"""Deployment mismatches are one line naming what differs, at serve, at publish and at export (never a silent slice
or identity): normalisation statistics missing, of the wrong size, not finite or of other actions; cameras a server
is told against those the policy was trained with. A policy exported as trained without statistics serves as it is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.assets import REPO

POLICY = REPO / "assets" / "metaworld_outcome" / "policy"  # 39 numbers of state, 4 actions in [-1, 1]


def broken_copy(tmp_path: Path, kind: str) -> Path:
    """A copy of the shipped policy with one kind of mismatch."""
    out = tmp_path / kind
    shutil.copytree(POLICY, out)
    stats_path = out / "norm_stats.json"
    data = json.loads(stats_path.read_text())
    stats = data["norm_stats"]
    if kind == "missing":
        stats_path.unlink()
    elif kind == "no_actions":
        del stats["actions"]
    elif kind == "wrong_size":
        stats["state"] = {k: v[:7] for k, v in stats["state"].items()}
    elif kind == "not_finite":
        stats["actions"]["std"][2] = float("nan")
    elif kind == "other_actions":  # e.g. joint positions in radians for an end-effector delta policy
        stats["actions"]["q01"] = [-3.1] * 4
        stats["actions"]["q99"] = [3.1] * 4
    elif kind == "unreadable":
        stats_path.write_text("{not json")
    elif kind == "trained_without":
        stats_path.unlink()
        deploy = json.loads((out / "deploy.json").read_text())
        deploy["source"]["norm_stats"] = False
        (out / "deploy.json").write_text(json.dumps(deploy))
    if stats_path.exists() and kind != "unreadable":
        stats_path.write_text(json.dumps(data))
    return out


CASES = {
    "missing": "norm_stats.json has no state and no actions statistics",
    "no_actions": "norm_stats.json has no actions statistics",
    "wrong_size": "norm_stats.json: state mean has 7 numbers, the policy's state has 39",
    "not_finite": "norm_stats.json: actions std holds NaN or infinite values",
    "other_actions": "norm_stats.json: actions[0] span [-3.1, 3.1] (q01, q99) but the action space is [-1, 1]",
    "unreadable": "norm_stats.json is unreadable",
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_serve_and_publish_refuse_each_mismatch_in_one_line(tmp_path, capsys, kind):
    from toolkits.deploy.registry import PolicyRegistry
    from toolkits.deploy.registry_cli import main as registry_main
    from toolkits.deploy.serve_policy import main as serve_main

    policy = broken_copy(tmp_path, kind)
    assert serve_main(["--policy-dir", str(policy), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--policy-dir='{policy}'" in err and CASES[kind] in err, err
    root = PolicyRegistry.create(tmp_path / "reg").root
    assert registry_main(["publish", "--registry", str(root), "--policy-dir", str(policy)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and CASES[kind] in err, err
    assert PolicyRegistry(root).versions() == []


def test_a_follower_refuses_a_version_with_a_mismatch(tmp_path):
    from toolkits.deploy.policy_source import RegistryFollower
    from toolkits.deploy.registry import PolicyRegistry
    from toolkits.deploy.served import ServedPolicy

    reg = PolicyRegistry.create(tmp_path / "reg")
    reg.publish_directory(POLICY)
    follower = RegistryFollower(reg, ServedPolicy, interval=3600)
    try:
        reg.publish_directory(broken_copy(tmp_path, "wrong_size"))  # the library publishes what it is given
        assert not follower.check() and CASES["wrong_size"] in follower.refused[2] and follower.version == 1
    finally:
        follower.close()


def test_cameras_other_than_the_trained_ones_are_refused(tmp_path, capsys):
    from toolkits.deploy.serve_policy import main

    assert main(["--policy-dir", str(POLICY), "--port", "0", "--cameras", "front", "wrist"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--cameras front wrist: the policy was trained with ['corner', 'gripperPOV'] (deploy.json)" in err


def test_a_policy_trained_without_statistics_is_checked_as_such(tmp_path):
    from toolkits.deploy.deploy_checks import policy_dir_deploy_problem

    assert policy_dir_deploy_problem(broken_copy(tmp_path, "trained_without")) is None
    assert policy_dir_deploy_problem(POLICY) is None


def test_export_refuses_statistics_of_the_wrong_size(tmp_path, capsys):
    """The statistics come from the job's rollout.model_dir: here one of a policy with another state."""
    from tests.toolkits.test_export_policy import write_checkpoint
    from toolkits.ckpt_convertor.export_policy import main

    step = write_checkpoint(tmp_path / "log")[0]
    broken = broken_copy(tmp_path, "wrong_size")
    assert main(["--checkpoint", str(step), "--out", str(tmp_path / "out"), "--model-dir", str(broken)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and CASES["wrong_size"] in err and str(broken) in err, err
    assert not (tmp_path / "out").exists()
