"""``scripts/refit_state_model.sh`` (a state model aligned with a new start policy) runs end to end, shrunk."""

import json
import os
import subprocess

import pytest

from tests.assets import REPO

pytestmark = pytest.mark.slow


def test_refit_script_writes_its_models_and_gauges_each(tmp_path):
    out = tmp_path / "refit"
    assets = REPO / "assets"
    # 6 episodes: the base data and, again, the extra data
    demos = str(assets / "metaworld_outcome" / "demos")
    env = dict(
        os.environ, BASE_DATA=demos, EXTRA_DATA=demos, EPISODES="1", STEPS="2", LONG_STEPS="2", PLANS="1", PLAN_STEPS="2",
        GAUGE_SEEDS="0", GAUGE_STARTS="1", GAUGE_SAMPLES="2", GAUGE_STEPS="8",
    )  # fmt: skip
    script = str(REPO / "scripts" / "refit_state_model.sh")
    policy = str(assets / "metaworld_outcome" / "policy")
    done = subprocess.run(
        ["bash", script, policy, str(out)], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for model in ("model", "long/model", "plans/model"):  # the refit, the longer-trained one, on its plans
        assert (out / model / "model.safetensors").is_file()
    assert "refit_state_model: done in" in done.stdout
    merged = json.loads((out / "data" / "index.json").read_text())["episodes"]
    assert len(merged) == 6 + 3 + 6  # the base data, the policy's 3 rollouts, the extra data
    gauges = done.stdout.count("3 starts x 2 samples, 8-step episodes")
    assert gauges == 4  # the base model's gauge, the refitted one's, the longer-trained one's, the plans' one
    plans = json.loads((out / "plan_rollouts" / "index.json").read_text())["episodes"]
    assert len(plans) == 3
    assert f"planned in the world model of {out}/long/model " in plans[0]["policy"]  # the longer-trained one
    assert f"state_model_config={out}/plans/model" in done.stdout  # the model to train in
    bad = subprocess.run(["bash", script, str(tmp_path / "nowhere"), str(tmp_path / "x")],
                         env=env, capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "POLICY_DIR=" in bad.stderr and not (tmp_path / "x").exists()
    env["EXTRA_DATA"] = f"{demos} {tmp_path / 'nowhere'}"
    bad = subprocess.run(
        ["bash", script, policy, str(tmp_path / "x")], env=env, capture_output=True, text=True
    )
    assert bad.returncode == 2 and f"EXTRA_DATA: {tmp_path / 'nowhere'} has no index.json" in bad.stderr
    assert not (tmp_path / "x").exists()


def test_refit_script_refuses_a_base_model_whose_data_it_cannot_rebuild(tmp_path):
    env = dict(
        os.environ,
        BASE_DATA="",
        BASE_MODEL=str(REPO / "assets" / "world_models" / "state_outcome20" / "model"),
    )
    policy = str(REPO / "assets" / "metaworld_outcome" / "policy")
    bad = subprocess.run(["bash", str(REPO / "scripts" / "refit_state_model.sh"), policy, str(tmp_path / "x")],
                         env=env, capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "BASE_DATA is empty with BASE_MODEL=" in bad.stderr
    assert not (tmp_path / "x").exists()
