"""The observation-only setting (``setting: observation_only``): a job, an imitation, a world-model or a state-model
training that would read privileged simulator state is refused in one line naming the key, before any work; the
same configs with proprioception and the success flag pass."""

from __future__ import annotations

import pytest

from policy_and_value.config import load_config
from tests.assets import REPO
from toolkits.base.errors import ConfigError

OBS = ["setting=observation_only", "env.train.state_type=proprio", "env.eval.state_type=proprio",
       "env.train.reward_signal=success"]  # fmt: skip
ROBOT = "which a robot does not record (setting: observation_only)"
DEMOS = str(REPO / "assets" / "metaworld_outcome" / "demos")


def test_an_observation_only_job_on_proprioception_and_success_validates():
    cfg = load_config("ppo_pi0_metaworld", OBS)
    assert cfg.setting == "observation_only" and cfg.env.train.state_type == "proprio"
    assert load_config("ppo_pi0_metaworld", []).setting == "privileged"  # the default reads what it is given


@pytest.mark.parametrize(
    ("job", "change", "message"),
    [
        ("ppo_pi0_metaworld", "env.train.state_type=full",
         "env.train.state_type='full': reads the simulator's object and goal poses, " + ROBOT + "; set state_type: proprio"),
        ("ppo_pi0_metaworld", "env.eval.state_type=full", "env.eval.state_type='full': reads the simulator's object"),
        ("ppo_pi0_metaworld", "env.train.reward_signal=dense",
         "env.train.reward_signal='dense': reads the simulator's shaped reward, " + ROBOT),
        ("ppo_mlp_cartpole", None, "env.train.env_type='gym': reads a gymnasium env's state vector"),
        ("rl_metaworld_outcome_wm", "~env.train.reward_signal",
         "env.train.state_model_config='assets/world_models/state_outcome/model': reads a state world model"),
    ],
)  # fmt: skip
def test_a_job_reading_privileged_state_is_refused_in_one_line(job, change, message):
    overrides = ["setting=observation_only"] if change is None else [*OBS, change]
    with pytest.raises(ConfigError) as err:
        load_config(job, overrides)
    assert str(err.value).count("\n") == 0 and str(err.value).startswith(f"config error: {message}"), (
        err.value
    )


def test_the_privileged_arms_still_validate_as_they_are():
    """The state recipes keep working in the setting they were measured in."""
    assert load_config("rl_metaworld_outcome_wm", []).env.train.state_model_config is not None


@pytest.mark.parametrize(
    ("module", "config", "overrides", "message"),
    [
        ("policy_and_value.offline.train_sft", "offline/sft_pi0_tiny", [f"data.path={DEMOS}"],
         "data.state_type='full': reads the simulator's object and goal poses"),
        ("world_models.train", "world_model/ltx_tiny", [f"data.path={DEMOS}"],
         "data.state_type='full': reads the simulator's object and goal poses"),
        ("world_models.train_state_model", "world_model/state_ensemble", [f"data.path={DEMOS}", "data.state_type=proprio"],
         "model.latent_components=0: reads simulator states (the state world model predicts them)"),
    ],
)  # fmt: skip
def test_an_offline_tool_reading_privileged_state_is_refused_before_it_loads_data(
    module, config, overrides, message, capsys
):
    from importlib import import_module

    code = import_module(module).main([config, "setting=observation_only", *overrides])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"config error: {message}"), err
