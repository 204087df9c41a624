"""PPO on the tiny pi0 VLA through the full Ray runtime: two data-parallel actor ranks, initial weights
from ``rollout.model_dir``, and the rollout's log-probs reproduced exactly by the actors."""

from pathlib import Path

import pytest
import torch

from policy_and_value.config import load_config
from policy_and_value.config.schema import JobConfig
from policy_and_value.envs.base import EnvSpec
from policy_and_value.models import make_policy
from tests.runtime.jobs import run_and_read

pytestmark = pytest.mark.slow


def metaworld_spec(cfg: JobConfig) -> EnvSpec:
    """What ppo_pi0_metaworld's envs give its policy: 4 actions in chunks of 4, the full 39-number state, one 64x64 view."""
    return EnvSpec(
        action_dim=4,
        num_action_chunks=4,
        state_dim=39,
        image_shape=(1, 64, 64),
        tasks=tuple(cfg.env.train.tasks),
    )


def save_imitation_checkpoint(overrides: list[str], path: Path) -> torch.nn.Module:
    """An "imitation checkpoint" for ppo_pi0_metaworld with ``overrides``: a pi0 directory for its env
    (full state, one 64x64 view), saved without a value head; returns the policy."""
    from policy_and_value.models.pi0 import save_pretrained

    cfg = load_config("ppo_pi0_metaworld", overrides)
    init = make_policy(
        cfg.model.model_copy(update={"add_value_head": False}), metaworld_spec(cfg), "chunk_level"
    )
    save_pretrained(init, path)
    return init


def test_pi0_ppo_two_actor_ranks_from_model_dir(tmp_path: Path):
    """Also with the offline anchor (a behaviour-cloning term on the shipped expert episodes, through DDP)
    and ``algorithm.critic_warmup_steps=1``: step 1 trains only the value head (with
    ``detach_value_features`` nothing else moves, nor in the ``critic_epochs`` pass), so the step-1 weights
    equal the imitation policy's."""
    from safetensors.torch import load_file

    overrides = [
        "cluster=partial_sharing", "env.train.num_envs=4", "env.eval.num_envs=2", "env.eval_episodes=2",
        "env.train.max_episode_steps=24", "env.eval.max_episode_steps=16", "algorithm.n_chunk_steps=4",
        "algorithm.update_epoch=1", "actor.global_batch_size=16", "actor.micro_batch_size=4",
        "runner.max_steps=2", "runner.val_check_interval=2", "runner.save_interval=1", "runner.progress_bar=false",
        "model.pi0.num_steps=2", "env.train.tasks=[reach-v3,drawer-close-v3]",
        "algorithm.offline_data_path=assets/quickstart/reset_episodes", "algorithm.offline_data_coef=0.5",
        "algorithm.critic_warmup_steps=1", "model.pi0.detach_value_features=true", "algorithm.critic_epochs=1",
    ]  # fmt: skip
    init = save_imitation_checkpoint(overrides, tmp_path / "init_policy")
    rows = run_and_read(
        "ppo_pi0_metaworld", tmp_path, "pi0", [*overrides, f"rollout.model_dir={tmp_path / 'init_policy'}"]
    )
    assert [r["step"] for r in rows] == [1, 2]
    assert [r["train/critic/warmup"] for r in rows] == [1.0, 0.0]
    # one minibatch per rank and one epoch: the ratio is measured before the only update, so the actors'
    # recomputed log-probs equal the rollout's (step 2: the policy has not moved since step 1's rollout)
    for row in rows:
        assert row["train/actor/ratio"] == pytest.approx(1.0, abs=1e-4)
        assert row["train/actor/approx_kl"] == pytest.approx(0.0, abs=1e-4)
    for key in (
        "train/critic/value_loss",
        "eval/success_once",
        "env/reach-v3/success_once",
        "train/actor/grad_norm",
        "train/actor/offline_fm_loss",
        "train/critic/fit_value_loss",  # the critic-only passes, their gradients averaged over the ranks
    ):
        assert any(key in r for r in rows), key
    checkpoints = tmp_path / "pi0" / "checkpoints"
    warm = load_file(checkpoints / "global_step_1" / "rollout" / "model.safetensors")
    before = init.state_dict()
    assert set(before) < set(warm) and any(k.startswith("value_head") for k in warm)
    for name, tensor in before.items():
        assert torch.equal(warm[name], tensor), name
    trained = load_file(checkpoints / "global_step_2" / "rollout" / "model.safetensors")
    assert any(not torch.equal(trained[name], tensor) for name, tensor in before.items())
    assert (checkpoints / "global_step_2" / "actor" / ".metadata").exists()


def test_pi0_model_dir_with_another_state_size_is_refused(tmp_path: Path):
    cfg = load_config("ppo_pi0_metaworld", [])
    spec = EnvSpec(
        action_dim=4, num_action_chunks=4, state_dim=4, image_shape=(1, 64, 64), tasks=("reach-v3",)
    )
    from policy_and_value.models.pi0 import save_pretrained

    save_pretrained(make_policy(cfg.model, spec, "chunk_level"), tmp_path / "proprio_policy")
    full_state = EnvSpec(
        action_dim=4, num_action_chunks=4, state_dim=39, image_shape=(1, 64, 64), tasks=("reach-v3",)
    )
    with pytest.raises(ValueError, match="trained with state_dim=4 but the env gives 39"):
        make_policy(cfg.model, full_state, "chunk_level", model_dir=str(tmp_path / "proprio_policy"))
