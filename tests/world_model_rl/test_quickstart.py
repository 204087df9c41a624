"""The quickstart as a user runs it (shortened, on rl_release's placement: two actor ranks) and the shipped models:
the observation-only policy and observation model it trains with, and rl_release_video's privileged ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.assets import assert_matches_sha256sums

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "assets" / "quickstart"
OBS_TASKS = ["button-press-topdown-v3", "door-open-v3", "drawer-open-v3"]


def test_the_shipped_observation_only_models_read_what_a_robot_records():
    from policy_and_value.models.pi0 import from_pretrained
    from toolkits.episodes import EpisodeDataset
    from world_models.state_model import StateModel

    policy_dir = REPO / "assets" / "metaworld_obs"
    model_dir = REPO / "assets" / "world_models" / "observation"
    assert assert_matches_sha256sums(policy_dir) >= 5 and assert_matches_sha256sums(model_dir) >= 3
    policy = from_pretrained(policy_dir / "policy")
    assert policy.cfg.state_dim == 4 and not policy.cfg.with_advantage_condition
    deploy = json.loads((policy_dir / "policy" / "deploy.json").read_text())
    assert (deploy["state_dim"], deploy["state_type"]) == (4, "proprio")  # the server asks for proprioception
    assert sorted(deploy["prompts"]) == OBS_TASKS
    model = StateModel.from_pretrained(model_dir / "model")
    assert (
        model.learned_codec and model.cfg.value_head and model.proprio_dim == 4 and not model.cfg.reward_head
    )
    assert sorted(EpisodeDataset(str(model_dir / "starts")).tasks) == OBS_TASKS


def test_shipped_quickstart_models_match_their_checksums_and_load():
    """rl_release_video's models: the privileged advantage-conditioned policy, the progress reward model, resets."""
    from policy_and_value.models.pi0 import from_pretrained
    from reward_models.modeling import FrameScorer
    from toolkits.episodes import EpisodeDataset

    assert assert_matches_sha256sums(ASSETS) >= 5
    policy = from_pretrained(ASSETS / "policy")
    assert policy.cfg.with_advantage_condition and policy.cfg.state_dim == 39
    assert FrameScorer.from_pretrained(ASSETS / "reward_model") is not None
    resets = EpisodeDataset(str(ASSETS / "reset_episodes"))
    assert sorted(resets.tasks) == ["button-press-topdown-v3", "drawer-close-v3", "reach-v3"]
    anchor = EpisodeDataset(str(ASSETS / "offline_episodes"))  # labelled, successes and failures
    assert sorted(anchor.tasks) == sorted(resets.tasks) and "labels" in anchor.info
    assert {e["success_once"] for e in anchor.entries} == {True, False}


@pytest.mark.slow
def test_quickstart_cli_runs_end_to_end_on_rl_release_placement(tmp_path):
    """The quickstart through its CLI (shortened), on rl_release's own placement: env and rollout on device
    0, two actor ranks on devices 0-1 (partial sharing). The other placements are exercised on a cheaper
    policy in tests/runtime/test_runner_gym.py and test_multi_node.py."""
    overrides = [
        "cluster=partial_sharing", "runner.max_steps=2", "runner.val_check_interval=2", "runner.save_interval=2",
        "runner.progress_bar=false", "env.eval_episodes=3", "env.eval.num_envs=3", "env.eval.max_episode_steps=40",
        "algorithm.num_group_envs=2", "algorithm.n_chunk_steps=3", "env.train.max_episode_steps=12",
        "actor.global_batch_size=24", "actor.micro_batch_size=6", f"runner.logger.log_path={tmp_path}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "policy_and_value.train", "quickstart", *overrides],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    summary = out.stdout[out.stdout.index("worldrl run finished") :]
    log_dir = tmp_path / "quickstart"
    for fragment in (
        "checkpoint:",
        "videos:",
        "wm videos:",
        "drawer-open-v3/success_once",
        "before -> after",
    ):
        assert fragment in summary, (fragment, summary)
    assert list((log_dir / "videos" / "eval").rglob("*.mp4"))
    assert list((log_dir / "wm_pred" / "train").rglob("*.mp4"))  # the observation model's decoded frames
    assert (log_dir / "checkpoints" / "global_step_2" / "rollout" / "model.safetensors").is_file()
    placement = json.loads((log_dir / "placement.json").read_text())
    assert [a["device"] for a in placement["actor"]] == [0, 1]
    assert [e["device"] for e in placement["env"]] == [0]
    rows = [json.loads(line) for line in (log_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for key in (
        "env/drawer-open-v3/return",
        "rollout/rewards",
        "train/actor/policy_loss",
        "train/actor/approx_kl",
    ):
        assert any(key in r for r in rows), key  # an imagined episode is 3 chunks: PPO on every step
    assert not any("train/critic/value_loss" in r for r in rows)  # GRPO: no critic
    config = (log_dir / "config.yaml").read_text()
    assert "setting: observation_only" in config and "state_type: proprio" in config
