"""Co-evolution in LIBERO and in the observation-only setting: the research arm ``rl_libero_obs_coevolution`` is
checked before start (LIBERO's evaluation on the held-out init states), its rollouts go to LIBERO's training init
states, and its refit keeps the observation model's frame code and heads, learning success from the episodes' ends.
On LIBERO-shaped episodes made here and tiny models; the rounds run for real in experiments/reports/observation_only.md."""

from __future__ import annotations

import json

import pytest
import torch

from policy_and_value.config import load_config
from tests.recipes.libero_episodes import write_libero_episodes
from tests.world_models.conftest import tiny_dynamics
from toolkits.base.errors import ConfigError
from toolkits.recipes.coevolution_checks import check_coevolution
from toolkits.recipes.libero_loop import TASKS
from world_models.state_model import StateModel
from world_models.train_state_model import main as train_state_model

JOB = "rl_libero_obs_coevolution"
OBSERVATION = ["setting=observation_only", "data.state_type=proprio", "train.success_labels=episode_end",
               "model.latent_components=3", "model.value_head=true", "model.hidden=16", "model.layers=1",
               "model.ensemble_size=2", "train.batch_size=4", "train.horizon=1", "train.warmup_steps=0"]  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, str]:
    """LIBERO-shaped recordings, a tiny VAE of both cameras and a tiny observation model trained on them as the
    observation-only setting trains one."""
    root = tmp_path_factory.mktemp("coevolution_libero")
    data = write_libero_episodes(root / "episodes")
    prompts = sorted(t.replace("_", " ") for t in TASKS)
    vae = str(
        tiny_dynamics(image_size=64, state_dim=8, action_dim=7, prompts=prompts).save_pretrained(root / "vae")
    )
    common = [
        f"data.path={data}",
        "data.holdout_fraction=0.0",
        f"render.dynamics_model_dir={vae}",
        "train.steps=2",
    ]
    assert (
        train_state_model([*common, f"output_dir={root / 'om'}", *OBSERVATION, "model.reward_head=false"])
        == 0
    )
    return {"data": data, "vae": vae, "model": str(root / "om" / "model")}


def _job(world: dict[str, str], tmp_path, *extra: str):
    overrides = [
        f"env.train.state_model_config={world['model']}", f"env.train.dynamics_model_config={world['vae']}",
        f"env.train.dynamics_model_image_root={world['data']}", "rollout.model_dir=null",
        f"runner.logger.log_path={tmp_path}", f"coevolution.state_model_data={world['data']}",
        f"coevolution.latent_cache={tmp_path / 'cache'}", "coevolution.refit_steps=1", *extra,
    ]  # fmt: skip
    cfg = load_config(JOB, overrides)
    check_coevolution(cfg)
    return cfg


def test_a_libero_coevolution_in_the_observation_only_setting_is_accepted(world, tmp_path):
    cfg = _job(world, tmp_path)
    assert cfg.setting == "observation_only" and cfg.env.eval.env_type == "libero"
    assert cfg.env.eval.start_states == "heldout"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("env.eval.start_states=train", "env.eval.start_states='train': heldout: coevolution's LIBERO rollouts start"),
        ("env.eval.start_states=all", "env.eval.start_states='all': heldout"),
        ("coevolution.state_model_data=null", "coevolution.state_model_data=None: the episodes the state model"),
    ],
)  # fmt: skip
def test_a_libero_coevolution_is_refused_in_one_line_before_start(world, tmp_path, change, message):
    with pytest.raises(ConfigError) as err:
        _job(world, tmp_path, change)
    assert str(err.value).count("\n") == 0 and str(err.value).startswith(f"config error: {message}"), (
        err.value
    )


def test_the_rounds_rollouts_start_from_libero_training_init_states(world, tmp_path, monkeypatch):
    """collect_real hands the collector LIBERO's keys (its suite, proprioception, the first 25 init states) and the
    eval env's cameras, size and step limit."""
    from toolkits.recipes import coevolution

    seen = {}

    def collect(tasks, episodes, cameras, size, noise, fail, steps, seed, num_envs, writer, **kw):
        seen.update(tasks=tasks, cameras=cameras, size=size, steps=steps, **kw)
        return {}

    monkeypatch.setattr("toolkits.collect_episodes.collect", collect)
    cfg = _job(world, tmp_path)
    out = coevolution.collect_real(cfg, "policy", str(tmp_path / "plans"), 3, 4)
    assert out == {"env_steps": 0, "episodes": 0, "success": 0.0}
    assert seen["simulator"] == {"env_type": "libero", "suite": "libero_object", "start_states": "train",
                                 "state_type": "proprio"}  # fmt: skip
    ev = cfg.env.eval
    assert (seen["tasks"], seen["cameras"], seen["size"], seen["steps"]) == (
        list(ev.tasks), list(ev.cameras), ev.image_size, ev.max_episode_steps
    )  # fmt: skip
    assert seen["noise_level"] == 0.5 and seen["policy_dir"] == "policy"


def test_a_refit_keeps_the_observation_models_code_and_heads_and_learns_from_outcomes(world, tmp_path):
    from toolkits.recipes.coevolution_refit import refit, refit_job

    cfg = _job(world, tmp_path, "coevolution.refit_focus=0")  # its data is no merge of rounds' episodes
    job = refit_job(cfg, world["data"], world["model"], world["vae"], str(tmp_path / "round_1"), [])
    assert job.setting == "observation_only" and job.train.success_labels == "episode_end"
    assert (job.model.latent_components, job.model.value_head, job.model.reward_head) == (3, True, False)
    state, vae = refit(cfg, world["data"], world["model"], world["vae"], str(tmp_path / "round_1"), [])
    assert vae == world["vae"] and json.loads(
        (tmp_path / "round_1" / "state_model" / "model" / "config.json").read_text()
    )
    before, after = StateModel.from_pretrained(world["model"]), StateModel.from_pretrained(state)
    assert after.cfg == before.cfg  # the same code, heads and sizes, warm-started
    assert torch.equal(after.latent_basis, before.latent_basis)  # the frames' code is kept, not refitted
    changed = [n for n, p in after.state_dict().items() if not torch.equal(p, before.state_dict()[n])]
    assert changed  # and it trained
