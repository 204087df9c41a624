"""A PPO job that trains on imagined (world-model) and real (Meta-World) envs mixed in one rollout and
evaluates in Meta-World, through the full Ray runtime: the runner cannot tell the imagined env from a
simulator, and metrics are reported per env group."""

from __future__ import annotations

import math

import pytest

from tests.runtime.jobs import run_and_read

pytestmark = pytest.mark.slow


def mixed_job(model_dirs, episodes, imagined_keys: str, real_keys: str, *overrides: str) -> list[str]:
    """Overrides of a tiny ppo_cnn_metaworld job on 2 imagined + 2 Meta-World envs, each group with its extra
    keys (``imagined_keys``/``real_keys``: ``,key:value`` items), 8-step episodes, 32-pixel frames."""
    dyn, reward = model_dirs
    imagined = (
        f"{{name:imagined,num_envs:2,env_type:world_model,dynamics_model_config:'{dyn}',"
        f"dynamics_model_image_root:'{episodes}',reward_model_config:'{reward}'{imagined_keys}}}"
    )
    return [
        f"env.train.groups=[{imagined},{{name:real,num_envs:2{real_keys}}}]", "env.train.cameras=[corner,gripperPOV]",
        "env.train.num_envs=4", "env.train.max_episode_steps=8", "env.train.image_size=32",
        "algorithm.n_chunk_steps=4", "algorithm.update_epoch=1", "actor.global_batch_size=8",
        "actor.micro_batch_size=4", "model.image_channels=[8,8]", "model.hidden_dims=[32,32]",
        "runner.progress_bar=false", *overrides,
    ]  # fmt: skip


def test_ppo_on_mixed_imagined_and_real_envs_evaluates_in_metaworld(episodes, model_dirs, tmp_path):
    overrides = mixed_job(
        model_dirs, episodes, ",visualize_wm_pred:true,reset_mode:keyframe",
        ",loss_weight:4",  # real chunks weigh 4 each
        "env.eval.cameras=[corner,gripperPOV]", "env.eval.image_size=32", "env.eval.num_envs=2",
        "env.eval_episodes=2", "env.eval.max_episode_steps=8",
        "runner.max_steps=2", "runner.val_check_interval=2", "runner.save_interval=2",
    )  # fmt: skip
    rows = run_and_read("ppo_cnn_metaworld", tmp_path, "wm", overrides)
    assert [r["step"] for r in rows] == [1, 2]
    # each env's group reaches the actor's credit (a group's loss_weight there: tests/algorithms/test_actor_update_options)
    for key in ("env/imagined/return", "env/real/return", "env/reach-v3/return", "train/actor/ratio",
                "eval/success_once", "rollout/imagined/advantages_mean", "rollout/real/advantages_mean"):  # fmt: skip
        assert any(key in r for r in rows), key
    videos = list((tmp_path / "wm" / "wm_pred" / "train" / "imagined").glob("*.mp4"))
    assert videos, "visualize_wm_pred writes prediction videos in the log dir"
    assert (tmp_path / "wm" / "checkpoints" / "global_step_2").is_dir()


def test_advantage_conditioned_imitation_on_imagined_chunks(episodes, model_dirs, tmp_path):
    """``train_mode: IL`` (RISE): the tiny pi0 imitates its own imagined chunks with the prompt carrying
    each chunk's advantage bin, anchored by flow matching on recorded episodes (``offline_data_coef``),
    while the critic keeps learning the values GAE needs; a run resumed from the step-1 checkpoint
    repeats step 2 exactly (offline draws included)."""
    dyn, reward = model_dirs
    overrides = [
        "env@env.train=world_model_3tasks", "~env.eval", "env.train.tasks=[reach-v3,push-v3]",
        f"env.train.dynamics_model_config={dyn}", f"env.train.dynamics_model_image_root={episodes}",
        f"env.train.reward_model_config={reward}", "env.train.image_size=32", "env.train.num_envs=4",
        "env.train.max_episode_steps=8", "algorithm.n_chunk_steps=4", "algorithm.train_mode=IL",
        "algorithm.advantage_dropout=0.25", "model.pi0.with_advantage_condition=true", "model.pi0.num_steps=2",
        f"algorithm.offline_data_path={episodes}", "algorithm.offline_data_coef=1.0",
        "actor.global_batch_size=8", "actor.micro_batch_size=4", "algorithm.update_epoch=2",
        "runner.max_steps=2", "runner.val_check_interval=-1", "runner.save_interval=1",
        "runner.progress_bar=false",
    ]  # fmt: skip
    rows = run_and_read("ppo_pi0_metaworld", tmp_path, "il", overrides)
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert math.isfinite(row["train/actor/fm_loss"]) and row["train/actor/fm_loss"] > 0
        assert math.isfinite(row["train/actor/offline_fm_loss"]) and row["train/actor/offline_fm_loss"] > 0
        assert 0.0 <= row["train/actor/positive_advantage_fraction"] <= 1.0
        assert "train/critic/value_loss" in row and "train/actor/ratio" not in row
    ckpt = tmp_path / "il" / "checkpoints" / "global_step_1"
    resumed = run_and_read(
        "ppo_pi0_metaworld", tmp_path, "resumed", [*overrides, f"runner.resume_dir={ckpt}"]
    )
    assert [r["step"] for r in resumed] == [2]
    untimed = [{k: v for k, v in r.items() if not k.startswith("time/")} for r in (rows[1], resumed[0])]
    assert untimed[0] == untimed[1]


def test_grpo_compares_samples_from_shared_imagined_starts(episodes, model_dirs, tmp_path):
    """``rl_release_grpo``'s recipe on tiny models: groups of imagined envs share a start, GRPO turns
    their episode returns (progress gained) into the IL bins, and the within-group spread is logged."""
    dyn, reward = model_dirs
    overrides = [
        "env.train.tasks=[reach-v3,push-v3]", f"env.train.dynamics_model_config={dyn}",
        f"env.train.dynamics_model_image_root={episodes}", f"env.train.reward_model_config={reward}",
        f"algorithm.offline_data_path={episodes}", "env.train.image_size=32", "~env.eval", "cluster=shared",
        "algorithm.num_group_envs=2", "algorithm.group_size=2", "env.train.group_size=2",
        "env.train.max_episode_steps=8", "algorithm.n_chunk_steps=2", "model.pi0.num_steps=2",
        "actor.global_batch_size=8", "actor.micro_batch_size=4", "runner.max_steps=2",
        "runner.val_check_interval=-1", "runner.save_interval=-1", "runner.progress_bar=false",
    ]  # fmt: skip
    rows = run_and_read("rl_release_grpo", tmp_path, "grpo", overrides)
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert math.isfinite(row["rollout/group_return_std"]) and row["rollout/group_return_std"] >= 0
        assert row["rollout/returns_max"] >= row["rollout/returns_min"]  # the episodes' progress gains
        assert 0.0 < row["train/actor/positive_advantage_fraction"] < 1.0  # ranked within groups
        assert math.isfinite(row["train/actor/fm_loss"]) and "train/critic/value_loss" not in row
