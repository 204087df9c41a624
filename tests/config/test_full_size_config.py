"""``rl_release_full`` (pi0.5 and an ltx_2b dynamics model at their published sizes) validates on this CPU
with the user's model directories, and prints each process's and device's model memory before start;
without them it stops on the first placeholder path, naming the key."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _validate(*overrides: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "policy_and_value.train", "rl_release_full", "--validate-only", *overrides]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_full_size_config_validates_and_prints_the_memory_estimate(tmp_path):
    from policy_and_value.models.pi0.configuration_pi0 import make_config
    from world_models.dynamics_config import make_config as dynamics_config

    (tmp_path / "policy").mkdir()
    (tmp_path / "wm").mkdir()
    make_config(
        "pi05",
        action_dim=4,
        state_dim=39,
        max_state_dim=39,
        num_action_chunks=4,
        with_advantage_condition=True,
    ).save(str(tmp_path / "policy" / "config.json"))
    dynamics_config("ltx_2b", action_dim=4, action_chunk=4, num_views=2, image_size=224).save(
        str(tmp_path / "wm" / "config.json")
    )
    done = _validate(
        f"rollout.model_dir={tmp_path / 'policy'}",
        f"env.train.dynamics_model_config={tmp_path / 'wm'}",
        "env.train.reward_model_config=assets/quickstart/reward_model",
        "algorithm.offline_data_path=assets/quickstart/offline_episodes",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # bf16 weights + gradients + AdamW moments split over the two actor ranks (25.0 GiB unsharded)
    assert "actor       18.7 GiB  (3,354M parameters 6.2 GiB" in out and "moments split over 2 ranks" in out
    assert "rollout      6.2 GiB" in out
    assert "dynamics model 2,359M parameters in bfloat16 4.4 GiB" in out  # measured on an H100: 4.4 GiB
    assert "device 0: 29.4 GiB (env + rollout + actor)" in out


def test_full_size_config_names_the_path_to_set():
    done = _validate()
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "SET_ME" in done.stderr and done.stderr.startswith("config error: ")


def test_a_value_left_as_hydra_missing_is_named(tmp_path):
    import pytest

    from toolkits.base.compose import compose_config
    from toolkits.base.errors import ConfigError

    (tmp_path / "needs_paths.yaml").write_text("rollout:\n  model_dir: ???\nrunner:\n  seed: ???\n")
    with pytest.raises(ConfigError, match=r"rollout.model_dir=\?\?\?: .* also unset: runner.seed"):
        compose_config("needs_paths", [], tmp_path)
    assert (
        compose_config("needs_paths", ["rollout.model_dir=x", "runner.seed=1"], tmp_path)["runner"]["seed"]
        == 1
    )
