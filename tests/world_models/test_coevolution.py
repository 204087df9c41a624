"""Co-evolution as a user runs it (``coevolution.rounds``): RL in imagination with a state model, real
rollouts of the exported policy, warm-started refits, real env steps counted per round, resumable rounds;
and its config checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from policy_and_value.config import JobConfig
from policy_and_value.config import load_config as load_job
from policy_and_value.envs.metaworld_tasks import PROMPTS
from reward_models import FrameScorer, RewardModelConfig
from tests.world_models.conftest import tiny_dynamics
from toolkits.base.errors import ConfigError
from toolkits.recipes.coevolution_checks import check_coevolution

TASKS = ["reach-v3", "push-v3"]
# mixed training: 2 imagined envs beside 2 Meta-World envs (one per task), the state model set on env.train
MIXED = [
    "env.train.num_envs=4",
    "env.train.groups=[{name:imagined,num_envs:2},{name:real,num_envs:2,env_type:metaworld}]",
]


def load_config(name: str, overrides: list[str]) -> JobConfig:
    """A co-evolution job as ``policy_and_value.train`` loads it: validated, then its co-evolution checks."""
    cfg = load_job(name, overrides)
    if cfg.coevolution.rounds > 0:
        check_coevolution(cfg)
    return cfg


@pytest.fixture(scope="module")
def real_world(tmp_path_factory) -> dict[str, str]:
    """Real expert episodes of the two tasks (32 px, 8 steps) and tiny models that know their prompts."""
    from toolkits.collect_episodes import collect
    from toolkits.episodes import EpisodeWriter
    from world_models.config import StateModelJob
    from world_models.train_state_model import train_state_model

    root = tmp_path_factory.mktemp("coevolution")
    data = str(root / "episodes")
    writer = EpisodeWriter(data, info={"cameras": ["corner", "gripperPOV"], "image_size": 32})
    writer.close(
        collect(TASKS, 2, ["corner", "gripperPOV"], 32, 0.1, 0.5, 8, 0, 2, writer, log=lambda *_: None)
    )
    prompts = sorted(PROMPTS[t] for t in TASKS)
    dyn = str(tiny_dynamics(prompts=prompts).save_pretrained(root / "dynamics"))
    scorer = FrameScorer(
        RewardModelConfig(num_views=2, image_size=32, channels=[8], hidden=16, prompts=prompts)
    )
    reward = str(scorer.save_pretrained(root / "reward"))
    job = StateModelJob.model_validate({
        "data": {"path": data, "holdout_fraction": 0.0}, "model": {"hidden": 16, "layers": 1, "ensemble_size": 2},
        "train": {"steps": 2, "batch_size": 4, "horizon": 1}, "output_dir": str(root / "state"),
        "render": {"dynamics_model_dir": dyn, "steps": 1, "hidden": 16},
    })  # fmt: skip
    state = str(train_state_model(job, log=lambda *_: None))
    return {"data": data, "dynamics": dyn, "reward": reward, "state": state}


def _overrides(world: dict[str, str]) -> list[str]:
    return [
        "env@env.train=world_model_3tasks", f"env.train.tasks={TASKS}", f"env.train.dynamics_model_config={world['dynamics']}",
        f"env.train.dynamics_model_image_root={world['data']}", f"env.train.reward_model_config={world['reward']}",
        f"env.train.state_model_config={world['state']}", "env.train.frames_from=state", "env.train.outcome_source=state",
        "env.train.success_threshold=0.5", "env.train.image_size=32", "env.train.num_envs=2", "env.train.max_episode_steps=8",
        "env.eval.cameras=[corner,gripperPOV]", "env.eval.image_size=32", "env.eval.num_envs=2", "env.eval.max_episode_steps=8",
        "env.eval_episodes=2", "algorithm.n_chunk_steps=2", "model.pi0.num_steps=2", "actor.global_batch_size=4",
        "actor.micro_batch_size=4", "algorithm.update_epoch=1", "runner.val_check_interval=1", "runner.progress_bar=false",
        "coevolution.rounds=2", "coevolution.steps_per_round=1", "coevolution.real_episodes_per_task=1",
        f"coevolution.state_model_data={world['data']}", "coevolution.refit_steps=1",
    ]  # fmt: skip


@pytest.mark.slow
def test_rounds_train_collect_refit_and_count_real_steps(real_world, tmp_path, capsys):
    """Mixed rounds: RL on imagined envs beside Meta-World ones, then a rollout and a plan per task, a refit;
    the real group's RL steps count as real env steps too."""
    from tests.runtime.jobs import shared_ray_job
    from toolkits.recipes.coevolution import run_coevolution

    cfg = load_config(
        "ppo_pi0_metaworld",
        [*_overrides(real_world), *MIXED, f"runner.logger.log_path={tmp_path}", "runner.logger.experiment_name=co",
         "coevolution.plans_per_task=1", "coevolution.refit_focus=0.5"],
    )  # fmt: skip
    with shared_ray_job():  # the rounds' jobs share this process's Ray (tests/runtime/jobs.py)
        records = run_coevolution(cfg)
    assert [r["round"] for r in records] == [1, 2] and [r["step"] for r in records] == [1, 2]
    for r in records:  # a rollout and a replayed plan per task, both counted, beside RL's real envs
        assert r["real_episodes"] == r["plan_episodes"] == len(TASKS)
        assert r["rl_real_env_steps"] == 2 * 8  # 2 real envs x one finished 8-step episode, one step a round
        assert len(TASKS) < r["real_env_steps"] - r["rl_real_env_steps"] <= 2 * 8 * len(TASKS)
        assert "eval/success_once" in r and os.path.isfile(
            os.path.join(r["state_model"], "model.safetensors")
        )
    assert records[1]["real_env_steps_total"] == records[0]["real_env_steps"] + records[1]["real_env_steps"]
    root = tmp_path / "co" / "coevolution"
    lines = [json.loads(x) for x in (root / "rounds.jsonl").read_text().splitlines()]
    assert [x["real_env_steps_total"] for x in lines] == [r["real_env_steps_total"] for r in records]
    # round 2 trained on the first state model's data plus both rounds' rollouts and plans
    merged = json.loads((root / "round_2" / "data" / "index.json").read_text())["episodes"]
    assert len(merged) == 2 * len(TASKS) + 2 * 2 * len(TASKS)
    plans = json.loads((root / "round_2" / "plans" / "index.json").read_text())["episodes"]
    assert all(f"planned in the world model of {records[0]['state_model']}" in e["policy"] for e in plans)
    # the refits share one latent cache: one VAE (not refitted), one entry per episode, each encoded once
    from world_models.latent_cache import file_fingerprint

    (vae,) = list((root / "latent_cache").iterdir())
    files = {file_fingerprint(str(root / "round_2" / "data" / e["file"])) for e in merged}
    assert {p.name.removesuffix(".safetensors") for p in vae.iterdir()} == files
    assert (root / "round_1" / "policy" / "config.json").is_file()
    assert records[1]["checkpoint"].endswith("global_step_2")
    metrics = [json.loads(x) for x in (tmp_path / "co" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]  # round 2 resumed round 1's checkpoint
    assert all("env/real/return" in m and "env/imagined/return" in m for m in metrics)
    assert "co-evolution round 2/2" in capsys.readouterr().out


def test_coevolution_keys_are_checked_before_start(real_world, tmp_path):
    keys = _overrides(real_world)
    with pytest.raises(ConfigError, match=r"coevolution.state_model_data=None: the episodes the state model"):
        load_config("ppo_pi0_metaworld", [*keys, "coevolution.state_model_data=null"])
    with pytest.raises(ConfigError, match=r"coevolution.state_model_data='.*/nowhere': no index.json here"):
        load_config("ppo_pi0_metaworld", [*keys, f"coevolution.state_model_data={tmp_path / 'nowhere'}"])
    # episodes of one task only: the refits train on both, so the job stops before round 1's RL
    with open(os.path.join(real_world["data"], "index.json")) as f:
        index = json.load(f)
    index["episodes"] = [e for e in index["episodes"] if e["task"] == "reach-v3"]
    (tmp_path / "reach_only").mkdir()
    (tmp_path / "reach_only" / "index.json").write_text(json.dumps(index))
    with pytest.raises(
        ConfigError, match=r"env.train.tasks=\['reach-v3', 'push-v3'\]: \['push-v3'\] not in the dataset"
    ):
        load_config("ppo_pi0_metaworld", [*keys, f"coevolution.state_model_data={tmp_path / 'reach_only'}"])
    with pytest.raises(
        ConfigError, match=r"coevolution.real_episodes_per_task=0: > 0 unless coevolution.plans_per"
    ):
        load_config("ppo_pi0_metaworld", [*keys, "coevolution.real_episodes_per_task=0"])
    with pytest.raises(
        ConfigError, match=r"env.train.tasks=\['push-v3', 'reach-v3'\]: env.eval.tasks in the same order"
    ):
        load_config(
            "ppo_pi0_metaworld", [*keys, "coevolution.plans_per_task=1", f"env.train.tasks={TASKS[::-1]}"]
        )
    mixed = load_config("ppo_pi0_metaworld", [*keys, *MIXED])  # a world-model group beside a real one
    assert [g.get("env_type") for g in mixed.env.train.groups] == [None, "metaworld"]
    with pytest.raises(
        ConfigError,
        match=r"env.train.env_type='world_model': .* one such env group beside real ones \(here 2\)",
    ):
        load_config(
            "ppo_pi0_metaworld",
            [*keys, *MIXED[:1], "env.train.groups=[{name:a,num_envs:2},{name:b,num_envs:2}]"],
        )
    own = (
        f"{{name:a,num_envs:2,state_model_config:'{real_world['state']}'}}"  # the group's own: never refitted
    )
    with pytest.raises(
        ConfigError, match=r"env.train.groups\[0\].state_model_config='.*': each round sets its refitted"
    ):
        load_config(
            "ppo_pi0_metaworld",
            [*keys, *MIXED[:1], f"env.train.groups=[{own},{{name:b,num_envs:2,env_type:metaworld}}]"],
        )
    with pytest.raises(ConfigError, match=r"env.eval.env_type=None: coevolution's real rollouts"):
        load_config("ppo_pi0_metaworld", [*keys, "~env.eval", "runner.val_check_interval=-1"])
    with pytest.raises(ConfigError, match=r"env.train.state_model_config=None: coevolution refits"):
        load_config(
            "ppo_pi0_metaworld",
            [
                *keys,
                "env.train.state_model_config=null",
                "env.train.frames_from=dynamics",
                "env.train.outcome_source=frames",
            ],
        )


def test_runs_share_a_latent_cache_and_encode_each_episode_once(real_world, tmp_path):
    """With ``coevolution.latent_cache`` two runs' refits on the same data share one folder: the second run's
    refit reads every entry the first wrote and encodes nothing, and neither run keeps a cache of its own."""
    from toolkits.recipes.coevolution import refit

    shared, world = tmp_path / "latents", real_world
    cfg = load_config("ppo_pi0_metaworld", [*_overrides(world), f"coevolution.latent_cache={shared}"])
    refit(cfg, world["data"], world["state"], world["dynamics"], str(tmp_path / "a" / "round_1"), [])
    (vae,) = list(shared.iterdir())
    written = {p.name: p.stat().st_mtime_ns for p in vae.iterdir()}
    index = json.loads((Path(world["data"]) / "index.json").read_text())
    assert len(written) == len(index["episodes"])
    refit(cfg, world["data"], world["state"], world["dynamics"], str(tmp_path / "b" / "round_1"), [])
    assert {p.name: p.stat().st_mtime_ns for p in vae.iterdir()} == written  # read back, none written again
    assert not (tmp_path / "a" / "latent_cache").exists() and not (tmp_path / "b" / "latent_cache").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"coevolution.latent_cache='.*/file': a folder for the renderer's"):
        load_config(
            "ppo_pi0_metaworld", [*_overrides(real_world), f"coevolution.latent_cache={tmp_path / 'file'}"]
        )


def test_a_stop_in_rl_names_the_checkpoint_to_resume_from(real_world, tmp_path, monkeypatch):
    """A SIGTERM during a round's RL (run_job raises JobStopped) ends co-evolution with the resume command
    (the state model to continue with comes from rounds.jsonl)."""
    from policy_and_value.runner.stop import JobStopped
    from toolkits.recipes.coevolution import run_coevolution

    def stopped(cfg):
        raise JobStopped("SIGTERM", 1, "/runs/co/checkpoints/global_step_1")

    monkeypatch.setattr("policy_and_value.runner.runner.run_job", stopped)
    cfg = load_config("ppo_pi0_metaworld", [*_overrides(real_world), f"runner.logger.log_path={tmp_path}"])
    with pytest.raises(JobStopped) as err:
        run_coevolution(cfg)
    assert str(err.value) == (
        "stopped by SIGTERM after step 1: continue with runner.resume_dir=/runs/co/checkpoints/global_step_1"
    )


def test_every_round_keeps_the_whole_lr_schedule(real_world):
    """A cosine lr schedule spans all rounds' optimiser steps in every round's job (round r's job trains
    only to step (r + 1) x steps_per_round, which would otherwise restart the cosine's span each round)."""
    from policy_and_value.algorithms import scheduled_optimizer_steps
    from toolkits.recipes.coevolution import round_config

    cfg = load_config("ppo_pi0_metaworld", [*_overrides(real_world), "actor.optim.lr_scheduler=cosine"])
    rounds = [round_config(cfg, r, None, real_world["state"], real_world["dynamics"]) for r in range(2)]
    per_round = scheduled_optimizer_steps(rounds[0].model_copy(update={"actor": cfg.actor}))
    assert [job.runner.max_steps for job in rounds] == [1, 2]
    assert [job.actor.optim.total_training_steps for job in rounds] == [2 * per_round, 2 * per_round]


@pytest.fixture
def recorded_rounds(real_world, tmp_path, monkeypatch):
    """run_coevolution with RL, export, real rollouts, merge and refit replaced by recorders (10 real steps a
    round, each refit a new state model folder; RL logs 12 env steps of finished episodes a step in a real
    group, 99 in an imagined one); returns (config of 2 rounds of 1 step, calls)."""
    from policy_and_value.config.env_checks import world_model_groups
    from toolkits.recipes import coevolution

    calls: dict[str, list] = {"jobs": [], "merged": []}

    def run_job(cfg):
        start = coevolution.checkpoint_step(cfg.runner.resume_dir) if cfg.runner.resume_dir else 0
        end = cfg.runner.max_steps
        calls["jobs"].append((start, end, world_model_groups(cfg.env.train)[0].state_model_config))
        saved = [str(tmp_path / "co" / "checkpoints" / f"global_step_{end}")] if start < end else []
        log_dir = tmp_path / "co"
        with open(log_dir / "metrics.jsonl", "a") as f:  # a resumed job logs its steps again
            for step in range(start + 1, end + 1):
                f.write(
                    json.dumps({"step": step, "env/real/episode_steps": 12, "env/imagined/episode_steps": 99})
                    + "\n"
                )
        return SimpleNamespace(saved=saved, global_step=max(start, end), last_eval={}, log_dir=str(log_dir))

    def collect_real(cfg, policy, out, seed, episodes, imagine=None):
        os.makedirs(out)
        calls.setdefault("collected", []).append(
            (os.path.basename(out), imagine and imagine.state_model_config)
        )
        return {"env_steps": 10, "episodes": 2, "success": 0.5}

    def refit(cfg, data, state_model, dynamics, out, rounds_data):
        calls.setdefault("focus", []).append(list(rounds_data))
        os.makedirs(os.path.join(out, "state_model"))
        return os.path.join(out, "state_model"), dynamics

    monkeypatch.setattr("policy_and_value.runner.runner.run_job", run_job)
    monkeypatch.setattr("toolkits.ckpt_convertor.export_policy.export_policy", lambda ckpt, out: out)
    monkeypatch.setattr(
        "toolkits.episodes.merge.merge_datasets", lambda d, out: calls["merged"].append(list(d))
    )
    monkeypatch.setattr(coevolution, "collect_real", collect_real)
    monkeypatch.setattr(coevolution, "refit", refit)
    cfg = load_config(
        "ppo_pi0_metaworld",
        [*_overrides(real_world), f"runner.logger.log_path={tmp_path}", "runner.logger.experiment_name=co"],
    )
    return cfg, calls


def _resumed(cfg, step: int, rounds: int, steps_per_round: int = 1):
    checkpoint = os.path.join(cfg.runner.logger.log_path, "co", "checkpoints", f"global_step_{step}")
    return cfg.model_copy(update={
        "runner": cfg.runner.model_copy(update={"resume_dir": checkpoint}),
        "coevolution": cfg.coevolution.model_copy(update={"rounds": rounds, "steps_per_round": steps_per_round}),
    })  # fmt: skip


def test_a_resumed_coevolution_keeps_its_finished_rounds_and_adds_more(recorded_rounds, real_world, tmp_path):
    from toolkits.recipes.coevolution import run_coevolution

    cfg, calls = recorded_rounds
    root = tmp_path / "co" / "coevolution"
    first = run_coevolution(cfg)
    model = {r["round"]: r["state_model"] for r in first}
    assert calls["jobs"] == [(0, 1, real_world["state"]), (1, 2, model[1])]
    # a third round on the finished run: rounds 1-2 kept, round 3 trains from step 2 with round 2's model
    records = run_coevolution(_resumed(cfg, 2, rounds=3))
    assert calls["jobs"][2:] == [(2, 3, model[2])]
    assert [r["real_env_steps_total"] for r in records] == [10, 20, 30]
    base, episodes = (
        cfg.coevolution.state_model_data,
        [str(root / f"round_{r}" / "episodes") for r in (1, 2, 3)],
    )
    assert calls["merged"][-1] == [base, *episodes]
    assert calls["focus"][-1] == episodes  # the refit's focus: every round's episodes, not the base data
    # back to step 1: round 1 kept, rounds 2 and 3 made anew (round 2's old folder cleared first)
    (root / "round_2" / "stale").write_text("from the attempt before")
    records = run_coevolution(_resumed(cfg, 1, rounds=3))
    assert calls["jobs"][3:] == [(1, 2, model[1]), (2, 3, str(root / "round_2" / "state_model"))]
    assert not (root / "round_2" / "stale").exists() and [r["round"] for r in records] == [1, 2, 3]
    lines = [json.loads(x) for x in (root / "rounds.jsonl").read_text().splitlines()]
    assert [x["round"] for x in lines] == [1, 2, 3] and lines[-1]["real_env_steps_total"] == 30
    # a run without a resume_dir starts anew
    assert [r["round"] for r in run_coevolution(cfg)] == [1, 2]
    assert len((root / "rounds.jsonl").read_text().splitlines()) == 2


def test_a_stop_during_a_refit_ends_after_the_round(recorded_rounds, real_world, tmp_path, monkeypatch):
    """A SIGTERM while round 1 refits (after RL's job, whose Ray stopped) lets the round finish and be recorded,
    then stops with the round's checkpoint to resume from; round 2 never starts."""
    import signal

    from policy_and_value.runner.stop import JobStopped
    from toolkits.recipes import coevolution

    cfg, calls = recorded_rounds
    recorded_refit = coevolution.refit

    def refit(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        return recorded_refit(*args)

    monkeypatch.setattr(coevolution, "refit", refit)
    with pytest.raises(JobStopped) as err:
        coevolution.run_coevolution(cfg)
    checkpoint = str(tmp_path / "co" / "checkpoints" / "global_step_1")
    assert str(err.value) == f"stopped by SIGTERM after step 1: continue with runner.resume_dir={checkpoint}"
    lines = (tmp_path / "co" / "coevolution" / "rounds.jsonl").read_text().splitlines()
    assert [json.loads(x)["round"] for x in lines] == [1] and len(calls["jobs"]) == 1


def test_rounds_of_plans_only_replay_what_the_round_imagined(recorded_rounds, real_world, tmp_path):
    """``plans_per_task`` without real rollouts: each round's plans are imagined in the state model that round
    trained in, their replayed steps are the round's real env steps, and a resumed run merges them again."""
    from toolkits.recipes.coevolution import run_coevolution

    cfg, calls = recorded_rounds
    co = cfg.coevolution.model_copy(update={"real_episodes_per_task": 0, "plans_per_task": 2})
    records = run_coevolution(cfg.model_copy(update={"coevolution": co}))
    assert calls["collected"] == [("plans", real_world["state"]), ("plans", records[0]["state_model"])]
    assert [(r["real_episodes"], r["plan_episodes"], r["real_env_steps_total"]) for r in records] == [
        (0, 2, 10), (0, 2, 20)
    ]  # fmt: skip
    root = tmp_path / "co" / "coevolution"
    plans = [str(root / f"round_{r}" / "plans") for r in (1, 2)]
    assert calls["merged"] == [
        [cfg.coevolution.state_model_data, *plans[:1]],
        [cfg.coevolution.state_model_data, *plans],
    ]
    resumed = _resumed(cfg, 2, rounds=3)
    run_coevolution(resumed.model_copy(update={"coevolution": co.model_copy(update={"rounds": 3})}))
    assert calls["merged"][-1][:3] == [cfg.coevolution.state_model_data, *plans]


def test_mixed_rounds_count_the_real_groups_steps(recorded_rounds, real_world, tmp_path):
    """Mixed training in every round: the world-model group trains with the round's refitted state model and
    plans in it; the real group's RL steps join the collected ones."""
    from toolkits.recipes.coevolution import run_coevolution

    _, calls = recorded_rounds
    cfg = load_config(
        "ppo_pi0_metaworld",
        [*_overrides(real_world), *MIXED, f"runner.logger.log_path={tmp_path}", "runner.logger.experiment_name=co",
         "coevolution.plans_per_task=1", "coevolution.steps_per_round=2"],
    )  # fmt: skip
    records = run_coevolution(cfg)
    assert calls["jobs"] == [(0, 2, real_world["state"]), (2, 4, records[0]["state_model"])]
    assert calls["collected"][1::2] == [("plans", real_world["state"]), ("plans", records[0]["state_model"])]
    # the real group's finished episodes' 12 env steps a step x 2 steps a round (not the imagined 99s)
    rl = 12 * 2
    assert [(r["rl_real_env_steps"], r["real_env_steps"], r["real_env_steps_total"]) for r in records] == [
        (rl, rl + 20, rl + 20), (rl, rl + 20, 2 * (rl + 20))
    ]  # fmt: skip
    # resumed from round 1's checkpoint: round 2 is redone and its RL steps counted once
    records = run_coevolution(_resumed(cfg, 2, rounds=2, steps_per_round=2))
    assert [r["real_env_steps_total"] for r in records] == [rl + 20, 2 * (rl + 20)]


def test_a_checkpoint_that_cannot_continue_the_rounds_is_refused(recorded_rounds, real_world, tmp_path):
    from toolkits.recipes.coevolution import finished_rounds, run_coevolution

    cfg, _ = recorded_rounds
    run_coevolution(cfg)  # rounds ending at steps 1 and 2
    with pytest.raises(ConfigError, match=r"steps_per_round=2: the rounds in .* end at steps \[1, 2\]"):
        finished_rounds(_resumed(cfg, 2, rounds=3, steps_per_round=2))
    (tmp_path / "co" / "coevolution" / "rounds.jsonl").write_text("")
    with pytest.raises(ConfigError, match=r"step 2 is past round 1's end .* records 0 finished rounds"):
        finished_rounds(_resumed(cfg, 2, rounds=3))
    # the validator asks before any work (a complete checkpoint at step 3, no rounds recorded)
    from tests.assets import write_complete_checkpoint

    step3 = write_complete_checkpoint(tmp_path / "co" / "checkpoints" / "global_step_3", 3)
    keys = [*_overrides(real_world), f"runner.logger.log_path={tmp_path}", "runner.logger.experiment_name=co"]
    with pytest.raises(ConfigError, match=r"runner.resume_dir=.*global_step_3.*past round 1's end"):
        load_config("ppo_pi0_metaworld", [*keys, f"runner.resume_dir={step3}"])


def _eval_job(setting: str, tasks: list[str]) -> SimpleNamespace:
    """What ``collect_real`` reads of a job: its setting, its Meta-World eval env, the policy's noise, the layouts."""
    ev = SimpleNamespace(env_type="metaworld", tasks=tasks, cameras=["corner", "gripperPOV"], image_size=64,
                         max_episode_steps=6, num_envs=len(tasks), suite=None, state_type="proprio")  # fmt: skip
    return SimpleNamespace(setting=setting, env=SimpleNamespace(eval=ev), model=SimpleNamespace(
        pi0={"noise_level": 0.5}), coevolution=SimpleNamespace(layout_seed=0))  # fmt: skip


def test_observation_only_rounds_record_what_a_robot_records(tmp_path, monkeypatch):
    """In the observation-only setting a round's Meta-World rollouts hold the hand's proprioception and the success
    alone (no object or goal pose, no shaped reward), as LIBERO's do; the privileged recipes keep the full state."""
    from toolkits.episodes import EpisodeDataset
    from toolkits.recipes import coevolution

    tasks = ["drawer-open-v3", "button-press-topdown-v3", "door-open-v3"]
    policy = str(Path(__file__).parents[2] / "assets" / "metaworld_obs" / "policy")
    out = coevolution.collect_real(_eval_job("observation_only", tasks), policy, str(tmp_path / "obs"), 0, 1)
    assert out["episodes"] == 3 and out["env_steps"] == 18
    episodes = EpisodeDataset(str(tmp_path / "obs"))
    for i in range(len(episodes)):
        state, reward, success = (episodes.read(i, k) for k in ("state", "rewards", "success"))
        assert state.shape == (7, 4), state.shape  # the start and 6 steps: hand xyz and gripper
        assert ((reward == 0) | (reward == 1)).all() and (reward == success).all(), (reward, success)

    seen = {}
    monkeypatch.setattr("toolkits.collect_episodes.collect", lambda *a, **kw: seen.update(kw) or {})
    coevolution.collect_real(_eval_job("privileged", tasks), policy, str(tmp_path / "full"), 0, 1)
    assert seen["simulator"] is None  # Meta-World as the privileged recipes read it
