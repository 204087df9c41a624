"""The improver: it waits for enough recorded episodes, trains warm from the registry's current version, gates the
candidate (held-out loss, Meta-World success) and publishes it with its gate metrics, or keeps the current version;
a restart after publishing does not publish twice; unreadable recordings are quarantined; bad config is one line."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.assets import REPO
from toolkits.deploy.registry import PolicyRegistry
from toolkits.online.config import ImproverConfig
from toolkits.online.improver import Improver, main

pytestmark = pytest.mark.slow
POLICY = REPO / "assets" / "quickstart" / "policy"
EPISODES = REPO / "assets" / "quickstart" / "offline_episodes"  # 12 episodes of 3 tasks, 9 successful
TINY = ["train.max_steps=2", "train.batch_size=4", "train.warmup_steps=1", "train.save_interval=2",
        "train.log_interval=1"]  # fmt: skip


@pytest.fixture
def service(tmp_path):
    """A registry serving the quickstart policy (version 1) and recordings of 12 episodes."""
    reg = PolicyRegistry.create(tmp_path / "reg")
    reg.publish_directory(POLICY)
    shutil.copytree(EPISODES, tmp_path / "rec")
    return reg, tmp_path


def config(tmp_path, **kw) -> ImproverConfig:
    base = {"registry": str(tmp_path / "reg"), "recordings": str(tmp_path / "rec"), "work_dir": str(tmp_path / "w"),
            "min_new_episodes": 10, "holdout_every": 4, "sft_overrides": TINY, "once": True}  # fmt: skip
    return ImproverConfig.model_validate(base | kw)


def test_a_round_waits_trains_gates_and_publishes_then_a_restart_does_not_publish_twice(service):
    reg, tmp = service
    assert Improver(config(tmp, min_new_episodes=20), log=print).round_if_ready() is None  # 12 < 20: waits
    cfg = config(tmp, gate={"max_heldout_loss_ratio": 100.0, "eval_tasks": ["reach-v3"], "eval_episodes": 1,
                            "eval_max_episode_steps": 8, "min_success_gain": -1.0})  # fmt: skip
    improver = Improver(cfg, log=print)
    record = improver.round_if_ready()
    assert record is not None and record["published"] == 2 and reg.current() == 2
    assert (record["train_episodes"], record["heldout_episodes"]) == (9, 3)
    manifest = reg.manifest(2)
    assert manifest.parent == 1 and manifest.source["improver_round"] == 1
    assert manifest.source["recipe"] == "filtered imitation" and manifest.gate["passed"] is True
    for key in ("heldout_loss_current", "heldout_loss_candidate", "heldout_loss_ratio", "success_gain"):
        assert isinstance(manifest.gate[key], float), key
    assert json.loads((reg.path(2) / "deploy.json").read_text())["cameras"] == ["corner", "gripperPOV"]
    assert list((tmp / "w" / "tensorboard").iterdir())
    # killed after publishing, before its state was written: the round is found in the registry, not redone
    again = Improver(cfg, log=print)
    again.state["rounds"].pop()
    assert again.run_round(1, 12)["resumed"] and reg.versions() == [1, 2]
    assert Improver(cfg, log=print).round_if_ready() is None  # nothing new


OBS_POLICY = REPO / "assets" / "metaworld_obs" / "policy"  # cameras, proprioception, the prompt
STARTS = REPO / "assets" / "world_models" / "observation" / "starts"  # 48 short episodes, 3 tasks
RL_TINY = ["runner.max_steps=1", "cluster=shared", "algorithm.num_group_envs=1", "algorithm.n_chunk_steps=3",
           "env.train.max_episode_steps=12", "actor.global_batch_size=24", "actor.micro_batch_size=6"]  # fmt: skip


def test_a_round_in_imagination_refits_the_world_model_then_publishes_what_rl_learned_in_it(tmp_path):
    from safetensors.torch import load_file

    from world_models.state_model import StateModel

    reg = PolicyRegistry.create(tmp_path / "reg")
    reg.publish_directory(OBS_POLICY)
    shutil.copytree(STARTS, tmp_path / "rec")
    cfg = config(tmp_path, method="imagination", gate={"max_heldout_loss_ratio": 100.0, "min_imagined_gain": -1.0},
                 imagination={"rl_overrides": RL_TINY, "refit_steps": 2, "eval_episodes": 3, "anchor_coef": 0.5})  # fmt: skip
    improver = Improver(cfg, log=print)
    record = improver.round_if_ready()
    assert record is not None and record["published"] == 2 and reg.current() == 2
    manifest = reg.manifest(2)
    assert manifest.source["recipe"] == "RL in imagination" and manifest.parent == 1
    refit = tmp_path / "w" / "round_001" / "world_model" / "model"
    assert manifest.source["world_model"] == str(refit) == improver.state["world_model"]  # next round's
    shipped = StateModel.from_pretrained(REPO / "assets" / "world_models" / "observation" / "model")
    assert StateModel.from_pretrained(refit).cfg == shipped.cfg  # warm: the same model, trained on
    gate = manifest.gate
    for key in ("imagined_success_current", "imagined_success_candidate"):
        assert 0.0 <= gate[key] <= 1.0, key
    assert gate["imagined_from_heldout"] == 1.0 and gate["rl_steps"] == 1.0
    assert gate["heldout_loss_ratio"] > 0  # every held-out episode: these recordings are all failures
    job = (
        tmp_path / "w" / "round_001" / "rl" / "config.yaml"
    ).read_text()  # anchored on the recorded episodes
    assert f"offline_data_path: {tmp_path}/w/round_001/train" in job and "offline_data_coef: 0.5" in job
    rows = (tmp_path / "w" / "round_001" / "rl" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(r)["step"] for r in rows if '"train/' in r] == [1]
    assert any("offline_fm_loss" in r for r in rows)
    before, after = load_file(OBS_POLICY / "model.safetensors"), load_file(reg.path(2) / "model.safetensors")
    assert any(not (before[k] == after[k]).all() for k in before)  # PPO moved the policy
    assert (reg.path(2) / "deploy.json").read_text() == (OBS_POLICY / "deploy.json").read_text()


def test_an_imagination_round_without_a_start_the_world_model_knows_is_skipped_not_repeated(tmp_path):
    reg = PolicyRegistry.create(tmp_path / "reg")
    reg.publish_directory(OBS_POLICY)
    shutil.copytree(
        EPISODES, tmp_path / "rec"
    )  # reach, button-press, drawer-close; the model knows button-press
    index = json.loads((tmp_path / "rec" / "index.json").read_text())
    index["episodes"] = [e for e in index["episodes"] if e["task"] != "button-press-topdown-v3"]
    (tmp_path / "rec" / "index.json").write_text(json.dumps(index))
    record = Improver(config(tmp_path, method="imagination", min_new_episodes=4), log=print).round_if_ready()
    assert record is not None and "no recorded training episode" in record["skipped"]
    assert reg.versions() == [1]
    state = json.loads((tmp_path / "w" / "state.json").read_text())
    assert "running" not in state and len(state["rounds"]) == 1  # recorded: a restart does not retry it


def test_a_candidate_that_fails_the_gate_is_not_published(service):
    reg, tmp = service
    cfg = config(tmp, gate={"max_heldout_loss_ratio": 1e-6})
    record = Improver(cfg, log=print).round_if_ready()
    assert record is not None and "published" not in record and record["gate"]["passed"] is False
    assert reg.versions() == [1] and reg.current() == 1
    state = json.loads((tmp / "w" / "state.json").read_text())
    assert state["rounds"][0]["gate"]["heldout_loss_ratio"] > 1e-6


def test_an_unreadable_recording_is_quarantined_and_the_rest_used(service):
    _, tmp = service
    index = json.loads((tmp / "rec" / "index.json").read_text())
    broken = index["episodes"][0]["file"]
    (tmp / "rec" / broken).write_bytes(b"cut short")
    improver = Improver(config(tmp), log=print)
    fresh = improver.new_episodes()
    assert len(fresh) == 11 and broken in improver.state["quarantined"]
    improver._save()
    assert len(Improver(config(tmp), log=print).new_episodes()) == 11  # quarantined once, for good


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("registry={tmp}/none", "registry="),
        ("recordings={tmp}", "no index.json"),
        ("reward_model={tmp}", "reward_model="),
        ("gate.eval_tasks=[reach-v9]", "gate.eval_tasks"),
        ('sft_overrides=["train.max_steps=0"]', "train.max_steps=0: input should be"),
        ("sft_overrides=[train.max_steps=0]", 'sft_overrides: quote list items that hold "="'),
        (
            'method=imagination imagination.rl_overrides=["runner.max_steps=0"]',
            "runner.max_steps=0: input should be",
        ),
        ("method=imagination imagination.rl_config=ppo_mlp_cartpole", "(imagination.rl_config"),
        ("method=imagination imagination.world_model={tmp}", "imagination.world_model="),
        (
            "method=imagination imagination.rl_config=rl_metaworld_wm_pessimistic_critic_20demo",
            "imagination.refit_steps=300: the refit trains on what a robot records",
        ),
        ("method=learning", "method="),
        ("min_new_episodes=0", "min_new_episodes"),
    ],
)
def test_bad_config_is_one_line_before_any_work(service, capsys, override, expected):
    _, tmp = service
    argv = [f"registry={tmp}/reg", f"recordings={tmp}/rec", f"work_dir={tmp}/w", "once=true",
            *override.format(tmp=tmp).split()]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err
    assert not (tmp / "w").exists()
