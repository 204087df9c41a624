"""The Meta-World job with two data-parallel actor ranks, as a user runs it: train, eval videos, save,
resume exactly (the optimiser state sharded over the two ranks), convert the checkpoint for deployment."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from policy_and_value.config import load_config
from policy_and_value.envs.base import EnvSpec
from policy_and_value.models import make_policy
from tests.runtime.jobs import run_and_read
from toolkits.base.errors import ConfigError

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
SMALL = [
    "env.train.num_envs=4",
    "env.train.image_size=32",
    "env.eval.image_size=32",
    "env.eval.num_envs=2",
    "env.eval_episodes=2",
    "env.eval.max_episode_steps=16",
    "env.train.max_episode_steps=24",
    "algorithm.n_chunk_steps=4",
    "algorithm.update_epoch=2",
    "actor.global_batch_size=8",
    "actor.micro_batch_size=2",
    "model.image_channels=[8,8]",
    "model.hidden_dims=[32,32]",
    "runner.progress_bar=false",
]


def _spec() -> EnvSpec:
    return EnvSpec(4, 4, 39, (1, 32, 32), ("reach-v3", "push-v3"), None, (-1.0,) * 4, (1.0,) * 4)


def _run(tmp_path: Path, name: str, extra: list[str]) -> list[dict]:
    return run_and_read("ppo_metaworld_2actors", tmp_path, name, [*SMALL, *extra])


def test_two_actor_ranks_train_save_resume_convert(tmp_path):
    full = _run(
        tmp_path, "full",
        ["runner.max_steps=2", "runner.save_interval=1", "runner.val_check_interval=2", "actor.shard_optimizer=true"],
    )  # fmt: skip
    assert [r["step"] for r in full] == [1, 2]
    for key in ("env/reach-v3/success_once", "env/push-v3/success_once", "eval/success_once", "train/actor/ratio",
                "time/outside_compute_share", "train/critic/explained_variance", "rollout/advantages_min"):  # fmt: skip
        assert any(key in r for r in full), key
    videos = sorted((tmp_path / "full" / "videos" / "eval").glob("*.mp4"))
    assert videos, "eval videos are written"
    assert list((tmp_path / "full" / "tensorboard").glob("events.out.tfevents.*"))
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "full" / "tensorboard"))
    events.Reload()
    assert any(tag.startswith("eval/video/") for tag in events.Tags()["images"]), "eval videos in TensorBoard"

    ckpt = tmp_path / "full" / "checkpoints" / "global_step_1"
    resumed = _run(
        tmp_path,
        "resumed",
        # weights through Ray's object store here, over the weight-sync group in the full run: same numbers
        ["runner.max_steps=2", "runner.val_check_interval=2", f"runner.resume_dir={ckpt}",
         "rollout.weight_sync=object_store", "actor.shard_optimizer=true"],
    )  # fmt: skip
    for a, b in zip(full[1:], resumed, strict=True):
        assert {k: v for k, v in a.items() if not k.startswith("time/")} == {
            k: v for k, v in b.items() if not k.startswith("time/")
        }

    shards = [torch.load(ckpt / "actor" / f"optimizer_shard_{r}_of_2.pt", weights_only=True) for r in (0, 1)]
    n_params = sum(
        1
        for p in make_policy(
            load_config("ppo_metaworld_2actors", SMALL).model, _spec(), "chunk_level"
        ).parameters()
    )
    assert (
        all(s["state"] for s in shards) and sum(len(s["state"]) for s in shards) <= n_params
    )  # each rank: its share
    with pytest.raises(
        ConfigError, match=r"actor.shard_optimizer=False: .* holds an optimiser sharded over 2 actor ranks"
    ):
        load_config("ppo_metaworld_2actors", [*SMALL, f"runner.resume_dir={ckpt}"])

    out = tmp_path / "export"
    proc = subprocess.run(
        [sys.executable, str(REPO / "toolkits/ckpt_convertor/convert_dcp_to_state_dict.py"), "--dcp_path",
         str(tmp_path / "full" / "checkpoints" / "global_step_2"), "--output_path", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    cfg = load_config("ppo_metaworld_2actors", SMALL)
    policy = make_policy(cfg.model, _spec(), cfg.algorithm.logprob_type)
    policy.load_state_dict(torch.load(out / "model_state_dict.pt", weights_only=True))


def test_grpo_plays_one_episode_per_env_with_group_advantages(tmp_path):
    rows = run_and_read(
        "grpo_cnn_metaworld",
        tmp_path,
        "grpo_cnn_metaworld",
        [
            "runner.max_steps=2",
            "runner.val_check_interval=-1",
            "env.train.use_images=false",
            "env.eval.use_images=false",
            "env.train.max_episode_steps=20",
            "algorithm.n_chunk_steps=5",
            "actor.global_batch_size=40",
            "actor.micro_batch_size=20",
            "runner.progress_bar=false",
        ],
    )
    for r in rows:
        assert r["env/num_episodes"] == 8  # no auto-reset: exactly one episode per env per step
        assert abs(r["rollout/advantages_mean"]) < 1e-5  # normalised within groups
        assert "train/critic/value_loss" not in r  # no critic
