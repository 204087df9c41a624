"""The LIBERO loop's last job (``rl_release_libero``, ``worldrl recipe libero-loop``) on tiny models made here:
imagined LIBERO envs (7-dim actions, the 8-dim proprio state, both LIBERO cameras) beside a real LIBERO
env group in one rollout, evaluated in LIBERO; and ``offline.evaluate`` in LIBERO."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from policy_and_value.config import load_config

pytestmark = pytest.mark.slow  # LIBERO envs take seconds to build and reset
TASK = "pick_up_the_alphabet_soup_and_place_it_in_the_basket"
PROMPT = "pick up the alphabet soup and place it in the basket"
CAMERAS = ["agentview", "robot0_eye_in_hand"]
SIZE = 32


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, str]:
    """LIBERO-shaped episodes (the reset frames and offline anchor), an untrained dynamics model, reward
    model and advantage-conditioned tiny pi0 sized for them."""
    from policy_and_value.config.schema import ModelConfig
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.models.pi0 import save_pretrained
    from policy_and_value.models.registry import make_policy
    from reward_models import FrameScorer, RewardModelConfig
    from toolkits.episodes import Episode, EpisodeWriter
    from world_models import DynamicsModel, make_config

    root = tmp_path_factory.mktemp("libero_loop")
    writer = EpisodeWriter(str(root / "episodes"), info={"cameras": CAMERAS, "image_size": SIZE})
    rng = np.random.default_rng(0)
    for i in range(2):
        t = 12
        images = rng.integers(0, 255, size=(t + 1, 2, SIZE, SIZE, 3), dtype=np.uint8)
        meta = {"prompt": PROMPT, "task": TASK, "success_once": i == 0}
        writer.write(Episode(images, rng.normal(size=(t + 1, 8)).astype(np.float32),
                             rng.uniform(-1, 1, (t, 7)).astype(np.float32), np.zeros(t, np.float32),
                             np.zeros(t, bool), meta))  # fmt: skip
    writer.close({})
    torch.manual_seed(0)
    fields = {"image_size": SIZE, "num_views": 2, "state_dim": 8, "action_dim": 7, "action_chunk": 4,
              "predict_state": True, "prompts": [PROMPT], "num_inference_steps": 2, "context_dim": 16,
              "transformer": {"num_attention_heads": 2, "attention_head_dim": 8, "num_layers": 1, "cross_attention_dim": 16}}  # fmt: skip
    dyn = DynamicsModel(make_config("tiny", **fields)).eval().save_pretrained(root / "dynamics")
    scorer = FrameScorer(
        RewardModelConfig(num_views=2, image_size=SIZE, channels=[8], hidden=16, prompts=[PROMPT])
    )
    spec = EnvSpec(action_dim=7, num_action_chunks=4, state_dim=8, image_shape=(2, SIZE, SIZE), tasks=(TASK,))
    model = ModelConfig(policy_type="pi0", add_value_head=False, num_action_chunks=4,
                        pi0={"preset": "tiny", "num_steps": 2, "with_advantage_condition": True})  # fmt: skip
    policy = save_pretrained(make_policy(model, spec), root / "policy")
    return {"episodes": str(root / "episodes"), "dynamics": str(dyn), "reward": str(scorer.save_pretrained(root / "reward")),
            "policy": str(policy)}  # fmt: skip


def _overrides(m: dict[str, str]) -> list[str]:
    return [
        f"env.train.tasks=[{TASK}]", f"env.eval.tasks=[{TASK}]", f"env.train.dynamics_model_config={m['dynamics']}",
        f"env.train.dynamics_model_image_root={m['episodes']}", f"env.train.reward_model_config={m['reward']}",
        f"algorithm.offline_data_path={m['episodes']}", f"rollout.model_dir={m['policy']}",
        f"env.train.image_size={SIZE}", f"env.eval.image_size={SIZE}", "env.train.num_envs=2",
        "env.train.groups.0.num_envs=1", "env.train.groups.1.num_envs=1", "env.train.groups.1.max_episode_steps=8",
        "algorithm.num_group_envs=2",
        "env.train.max_episode_steps=8", "algorithm.n_chunk_steps=2", "model.pi0.num_steps=2",
        "env.eval.num_envs=1", "env.eval_episodes=1", "env.eval.max_episode_steps=8", "algorithm.update_epoch=1",
        "actor.global_batch_size=4", "actor.micro_batch_size=4", "runner.max_steps=1", "runner.val_check_interval=1",
        "runner.save_interval=-1", "runner.progress_bar=false",
    ]  # fmt: skip


def test_the_shipped_loop_configs_compose_with_libero_sizes(models):
    """A world-model env trained on LIBERO episodes gives their 8-dim state (``state_type: full``), so it
    validates beside a ``libero`` group (proprio, 8) with 7-dim actions; the loop's offline configs load."""
    from policy_and_value.config.env_checks import env_groups
    from policy_and_value.config.sizes import env_sizes
    from policy_and_value.offline.config import SFTConfig
    from reward_models.config import RewardModelJob
    from toolkits.base.compose import compose_config
    from toolkits.base.errors import ConfigError
    from world_models.config import WorldModelJob

    cfg = load_config("rl_release_libero", _overrides(models))
    groups = dict(env_groups(cfg.env.train))
    assert [g.env_type for g in groups.values()] == ["world_model", "libero"]
    assert [env_sizes(g) for g in groups.values()] == [(7, 8), (7, 8)]
    assert cfg.env.eval.env_type == "libero" and env_sizes(cfg.env.eval) == (7, 8)
    with pytest.raises(ConfigError, match="action_dim=4"):  # a Meta-World-sized policy is named
        load_config("rl_release_libero", [*_overrides(models), "rollout.model_dir=assets/quickstart/policy"])
    sft = SFTConfig.model_validate(compose_config("offline/sft_pi0_libero", []))
    assert sft.data.state_type == "full" and sft.model.num_action_chunks == 4
    wm = WorldModelJob.model_validate(compose_config("world_model/ltx_libero", []))
    assert wm.model["action_chunk"] == 4 and wm.data.state_type == "full"
    rm = RewardModelJob.model_validate(compose_config("reward/progress_libero", []))
    assert rm.model.kind == "progress"


def test_rl_release_libero_trains_on_imagined_and_real_libero_envs(models, tmp_path):
    from tests.runtime.jobs import run_and_read

    rows = run_and_read("rl_release_libero", tmp_path, "loop", _overrides(models))
    assert [r["step"] for r in rows] == [1]
    row = rows[0]
    for key in ("env/imagined/return", "env/real/return", "train/actor/fm_loss", "train/actor/offline_fm_loss"):  # fmt: skip
        assert key in row and math.isfinite(row[key]), key
    assert row["eval/episode_steps"] == 8 and "eval/success_once" in row  # evaluated in LIBERO, truncated
    assert row["time/generate_rollouts"] > 0
    assert list((tmp_path / "loop" / "videos" / "eval").glob("*.mp4")), "LIBERO eval videos are written"


def test_offline_evaluate_runs_in_libero(models, capsys):
    from policy_and_value.offline.evaluate import main

    argv = ["--model-dir", models["policy"], "--suite", "libero_object", "--tasks", TASK, "--episodes", "1",
            "--image-size", str(SIZE), "--max-episode-steps", "8"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"| {TASK} | 1 | 0% |" in out  # an untrained policy, 8 steps: no success


def test_a_policy_collects_libero_episodes_on_the_heldout_init_states(models, tmp_path):
    """``collect_episodes --suite libero_object --policy-dir`` (the observation-only start's own rollouts):
    the policy's chunks executed an action a step, on the init states training never used."""
    from toolkits.collect_episodes import main
    from toolkits.episodes import EpisodeDataset

    out = tmp_path / "rollouts"
    argv = ["--suite", "libero_object", "--tasks", TASK, "--episodes-per-task", "2", "--num-envs", "2",
            "--image-size", str(SIZE), "--max-episode-steps", "6", "--policy-dir", models["policy"],
            "--noise-level", "0.5", "--start-states", "heldout", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    ds = EpisodeDataset(str(out))
    assert len(ds) == 2 and ds.info["start_states"] == "heldout"
    ep = ds[0]
    assert ep.meta["policy"].startswith("pi0 ") and ep.actions.shape == (6, 7) and ep.state.shape == (7, 8)
    assert ep.images.shape == (7, 2, SIZE, SIZE, 3) and not ep.meta["success_once"]
