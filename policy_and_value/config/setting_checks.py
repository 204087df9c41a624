"""The observation-only setting's check of a job: nothing the policy, its critic or its world model reads may be
simulator state, and nothing it trains on may be the simulator's reward (``setting: observation_only``)."""

from __future__ import annotations

from policy_and_value.config.env_checks import all_envs, saved_state_model_config
from policy_and_value.config.schema import JobConfig
from toolkits.base.setting import OBSERVATION_ONLY, POSES, privileged


def check_setting(cfg: JobConfig) -> None:
    """Refuse, naming the key, every part of ``cfg`` that would read privileged state in the observation-only
    setting: a full simulator state as policy (and critic) input, a shaped simulator reward to train on, a state
    world model that predicts simulator state (an observation model is allowed; co-evolution refits it on episodes'
    outcomes, ``toolkits.recipes.coevolution_refit``)."""
    if cfg.setting != OBSERVATION_ONLY:
        return
    for key, env in all_envs(cfg):
        if env.env_type == "gym":
            raise privileged(f"{key}.env_type", "gym", "a gymnasium env's state vector", "use a camera env")
        if env.state_type == "full":
            raise privileged(f"{key}.state_type", "full", POSES, "set state_type: proprio")
        training = key.startswith("env.train")
        if training and getattr(env, "reward_signal", "success") == "dense":
            raise privileged(f"{key}.reward_signal", "dense", "the simulator's shaped reward",
                             "train on the episode's success (reward_signal: success) or a reward model")  # fmt: skip
        if env.env_type == "world_model" and env.state_model_config is not None:
            # an observation model's state is proprioception and the frames' latent components (the env checks, run
            # first, found its config.json)
            if not saved_state_model_config(env.state_model_config).get("latent_components"):
                raise privileged(f"{key}.state_model_config", env.state_model_config,
                                 "a state world model, which predicts simulator state",
                                 "imagine with an observation model (world_models.train_state_model model.latent_components=64)")  # fmt: skip
            if env.reward_mode == "state_reward":
                raise privileged(f"{key}.reward_mode", "state_reward", "the simulator's shaped reward (a reward head's)",
                                 "set reward_mode: success")  # fmt: skip
