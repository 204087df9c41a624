"""``scripts/prepare_state_outcome.sh`` (the rebuild of assets/world_models/state_outcome) runs end to end, shrunk."""

import os
import subprocess

import pytest

from tests.assets import REPO

pytestmark = pytest.mark.slow


def test_rebuild_script_writes_both_models_and_gauges_them(tmp_path):
    out = tmp_path / "state_outcome"
    env = dict(
        os.environ, EPISODES="1", STATE_STEPS="2", RENDER_STEPS="2", HEAD_STEPS="2", LONG_STEPS="2", STARTS="1",
        GAUGE_STARTS="1", GAUGE_SAMPLES="2", GAUGE_STEPS="8",
    )  # fmt: skip
    script = str(REPO / "scripts" / "prepare_state_outcome.sh")
    done = subprocess.run(["bash", script, str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    for model in ("states", "train", "long"):
        assert (out / model / "model" / "model.safetensors").is_file()
    assert (out / "rollouts" / "index.json").is_file()  # what coevolution.state_model_data takes
    assert "prepare_state_outcome: done in" in done.stdout
    assert done.stdout.count("3 starts x 2 samples, 8-step episodes") == 2  # the gauge and the dense gauge
