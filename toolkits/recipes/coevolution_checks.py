"""Checks of a co-evolution job (``coevolution.rounds`` > 0), run before any work: the world-model env it refits,
the episodes its state model was trained on, the eval env (Meta-World or LIBERO) its real rollouts use and a checkpoint
it resumes."""

from __future__ import annotations

import json
import os
from typing import Any

from policy_and_value.config.data_checks import check_episode_data
from policy_and_value.config.env_checks import world_model_groups
from policy_and_value.config.schema import JobConfig
from toolkits.base.checkpoint import checkpoint_step, log_dir_of
from toolkits.base.errors import config_error
from world_models.latent_cache import check_cache_dir


def check_coevolution(cfg: JobConfig) -> None:
    """Co-evolution needs one world-model env with a state model (alone or beside real env groups), the
    episodes it was trained on, a Meta-World or LIBERO eval env (whose tasks and views the real rollouts use; LIBERO's
    evaluation on the held-out init states, as the rollouts take the training ones) and a pi0 policy (exported for
    those rollouts)."""
    co, train, ev = cfg.coevolution, cfg.env.train, cfg.env.eval
    if co.rounds == 0:
        return
    worlds = world_model_groups(train)
    world = worlds[0] if len(worlds) == 1 else train
    # a group's own state or dynamics model would never see the rounds' refits (they are set on env.train)
    models = ("state_model_config", "dynamics_model_config")
    own = next(
        ((f"env.train.groups[{i}].{k}", g[k]) for i, g in enumerate(train.groups) for k in models if k in g),
        None,
    )
    needs = [
        ("env.train.env_type", train.env_type, len(worlds) == 1,
         "coevolution.rounds > 0 trains in one world-model env: env_type world_model, or one such env group "
         f"beside real ones (here {len(worlds)})"),
        (*(own or ("env.train.groups", None)), own is None,
         "each round sets its refitted models on env.train, which the world-model group inherits: set them there"),
        ("env.train.state_model_config", world.state_model_config, world.state_model_config is not None,
         "coevolution refits the state model: set a state model directory"),
        ("env.eval.env_type", ev.env_type if ev else None, ev is not None and ev.env_type in ("metaworld", "libero"),
         "coevolution's real rollouts use a metaworld or libero eval env's tasks and views"),
        ("env.eval.start_states", getattr(ev, "start_states", None),
         ev is None or ev.env_type != "libero" or ev.start_states == "heldout",
         "heldout: coevolution's LIBERO rollouts start from the training init states (the first 25), which the "
         "evaluation must not see"),
        ("model.policy_type", cfg.model.policy_type, cfg.model.policy_type in ("pi0", "pi05"),
         "coevolution exports the policy for its real rollouts: pi0 or pi05"),
        ("coevolution.real_episodes_per_task", co.real_episodes_per_task,
         co.real_episodes_per_task + co.plans_per_task > 0,
         "> 0 unless coevolution.plans_per_task > 0 (a refit needs new real episodes)"),
        ("env.train.tasks", list(world.tasks),
         co.plans_per_task == 0 or ev is None or list(world.tasks) == list(ev.tasks),
         f"env.eval.tasks in the same order with coevolution.plans_per_task > 0 (each plan is imagined in "
         f"env.train's world model and replayed in env.eval's simulator): {list(ev.tasks) if ev else []}"),
    ]  # fmt: skip
    for key, value, ok, allowed in needs:
        if not ok:
            raise config_error(key, value, allowed)
    data = co.state_model_data
    if data is None:
        raise config_error(
            "coevolution.state_model_data",
            data,
            "the episodes the state model was trained on (a dataset with index.json)",
        )
    check_cache_dir("coevolution.latent_cache", co.latent_cache)  # before round 1's RL, not at its refit
    # each refit trains on these episodes with the world-model env's tasks: a missing one would fail after round 1's RL
    check_episode_data(data, list(world.tasks), "coevolution.state_model_data", "env.train.tasks")
    if cfg.runner.resume_dir:  # a checkpoint that cannot continue this log dir's rounds
        finished_rounds(cfg)


def finished_rounds(cfg: JobConfig) -> list[dict[str, Any]]:
    """The rounds a co-evolution resumed from ``runner.resume_dir`` keeps: the records of
    ``<log_dir>/coevolution/rounds.jsonl`` up to the checkpoint's step (none without a resume_dir). A
    ``ConfigError`` when the checkpoint cannot continue them, before any work."""
    co, resume = cfg.coevolution, cfg.runner.resume_dir
    if co.rounds == 0 or not resume:
        return []
    step, path = checkpoint_step(resume), os.path.join(log_dir_of(cfg), "coevolution", "rounds.jsonl")
    records = []
    if os.path.isfile(path):
        with open(path) as f:
            records = [json.loads(line) for line in f if line.strip()]
    kept = [r for r in records if r["step"] <= step][: co.rounds]
    ends = [r["step"] for r in kept]
    if ends != [co.steps_per_round * (i + 1) for i in range(len(kept))]:
        raise config_error(
            "coevolution.steps_per_round", co.steps_per_round,
            f"the rounds in {path} end at steps {ends}: resume with the steps_per_round they were made with",
        )  # fmt: skip
    if step > (len(kept) + 1) * co.steps_per_round:
        raise config_error(
            "runner.resume_dir", resume,
            f"step {step} is past round {len(kept) + 1}'s end and {path} records {len(kept)} finished rounds "
            "before it: resume from a checkpoint of this co-evolution's log dir",
        )  # fmt: skip
    return kept
