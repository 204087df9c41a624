"""``rl_metaworld_outcome`` as a user runs it, shrunk: whole episodes scored by their outcome, GRPO groups
(of 2 here, 8 in the config) on one layout, uniform groups dropped, filtered imitation with its replay,
and an exact resume; with LoRA adapters and a rollout EMA, so the checkpoint is then exported by the CLI
(LoRA merged), served and queried by openpi's client."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.assets import REPO, assert_matches_sha256sums
from tests.deploy.conftest import NO_OPENPI_CLIENT, observation
from tests.runtime.jobs import run_and_read

pytestmark = pytest.mark.slow
SMALL = [
    "algorithm.num_group_envs=3",  # one layout per task
    "algorithm.group_size=2",  # x 2 samples = 6 envs
    "env.train.group_size=2",
    "env.train.max_episode_steps=24",
    "algorithm.n_chunk_steps=6",
    "actor.global_batch_size=18",
    "actor.micro_batch_size=18",
    "algorithm.imitation_replay_size=500",
    "env.eval.num_envs=3",
    "env.eval_episodes=3",
    "env.eval.max_episode_steps=24",
    "runner.val_check_interval=2",
    "runner.save_interval=2",
    "runner.progress_bar=false",
    "model.pi0.is_lora=true",
    "model.pi0.lora_rank=4",
    "rollout.rollout_ema_decay=0.5",
]


def test_shipped_start_matches_its_checksums():
    assert assert_matches_sha256sums(REPO / "assets" / "metaworld_outcome") >= 7


def test_the_start_that_aims_matches_its_checksums():
    """The shipped 20-demonstration start; its anchor's 57 demonstrations are rebuilt, so the list of their
    checksums is all it ships of them."""
    root = REPO / "assets" / "metaworld_outcome20"
    assert assert_matches_sha256sums(root) == 6  # the policy directory with its deploy.json
    assert len((root / "DEMOS.SHA256SUMS").read_text().splitlines()) == 57


def test_the_start_on_both_kinds_of_frame_matches_its_checksums():
    """``start=outcome20_both``: its anchor's 114 episodes (recorded and redrawn) are rebuilt, only listed."""
    from policy_and_value.config import load_config
    from toolkits.base.errors import ConfigError

    root = REPO / "assets" / "metaworld_outcome20_both"
    assert assert_matches_sha256sums(root) == 6  # the policy directory with its deploy.json
    assert len((root / "DEMOS.SHA256SUMS").read_text().splitlines()) == 114
    anchor = REPO / "assets" / "metaworld_outcome" / "demos"
    for name in ("rl_metaworld_dense_critic_20demo", "rl_metaworld_dense_wm_critic_20demo"):
        cfg = load_config(name, ["start=outcome20_both", f"algorithm.offline_data_path={anchor}"])
        assert cfg.rollout.model_dir == "assets/metaworld_outcome20_both/policy"
    with pytest.raises(
        ConfigError,
        match=r"build it with: worldrl recipe outcome-start --out data/outcome_start20_both --demos 20 --demos-only --redraw-config",
    ):
        load_config("rl_metaworld_dense_wm_critic_20demo", ["start=outcome20_both"])


@pytest.mark.parametrize(
    "name",
    [
        "rl_metaworld_dense_critic_20demo",
        "rl_metaworld_dense_wm_critic_20demo",
        "rl_metaworld_mixed_critic_20demo",
        "rl_metaworld_mixed_third_critic_20demo",
        "rl_metaworld_mixed_door_critic_20demo",
    ],
)
def test_the_recipes_of_the_start_that_aims_validate(name):
    """The recipes compose on the shipped start, the 2-demonstration start's anchor standing in for theirs; the
    mixed ones give each env group the tasks their headers say."""
    from policy_and_value.config import load_config
    from policy_and_value.config.env_checks import env_groups
    from policy_and_value.envs.base import assign_tasks

    anchor = REPO / "assets" / "metaworld_outcome" / "demos"
    cfg = load_config(name, [f"algorithm.offline_data_path={anchor}"])
    assert cfg.rollout.model_dir == "assets/metaworld_outcome20/policy"
    groups = {
        n: (
            g.env_type,
            g.num_envs,
            sorted(set(assign_tasks(g.num_envs, len(g.tasks), 0, g.group_size, g.task_weights).tolist())),
        )
        for n, g in env_groups(cfg.env.train)
    }  # the tasks each group's envs are given
    expected = {
        "rl_metaworld_mixed_critic_20demo": {
            "imagined": ("world_model", 48, [0, 1, 2]),
            "real": ("metaworld", 12, [0, 1, 2]),
        },
        # a third of the real arm's 48 envs, on reach and door-open only
        "rl_metaworld_mixed_third_critic_20demo": {
            "imagined": ("world_model", 48, [0, 1, 2]),
            "real": ("metaworld", 16, [0, 2]),
        },
        # all real envs on door-open, the imagined ones on reach and button-press
        "rl_metaworld_mixed_door_critic_20demo": {
            "imagined": ("world_model", 16, [0, 1]),
            "real": ("metaworld", 16, [2]),
        },
    }
    # (a global batch that does not divide a step's samples: load_config's check_batches refuses it)
    assert groups == expected.get(name, {})


def test_outcome_job_trains_resumes_exactly_and_its_checkpoint_serves(tmp_path: Path):
    steps = ["runner.max_steps=2", "runner.save_interval=1"]
    full = run_and_read("rl_metaworld_outcome", tmp_path, "full", [*SMALL, *steps])
    assert [r["step"] for r in full] == [1, 2]
    for row in full:
        assert 0.0 <= row["rollout/mixed_group_fraction"] <= 1.0
        assert row["env/return"] == row["env/success_once"]  # the reward is the outcome
        assert 0 < row["env/episode_steps"] <= 24 * 6
    assert "eval/success_once" in full[1]
    sizes = [r.get("train/actor/replay_size", 0.0) for r in full]
    assert sizes == sorted(sizes)  # the replay only grows (below its capacity)
    checkpoint = tmp_path / "full" / "checkpoints" / "global_step_1"
    resumed = run_and_read(
        "rl_metaworld_outcome",
        tmp_path,
        "resumed",
        [*SMALL, *steps, f"runner.resume_dir={checkpoint}"],
    )
    assert [r["step"] for r in resumed] == [2]
    for key in (
        "env/success_once",
        "rollout/mixed_group_fraction",
        "env/episode_steps",
        "train/actor/fm_loss",
    ):
        if key in full[1]:
            assert resumed[0][key] == pytest.approx(full[1][key], rel=1e-6), key
    _export_and_serve(checkpoint, tmp_path / "policy")


def _export_and_serve(step: Path, out: Path) -> None:
    """``export_policy`` on a real job's checkpoint: LoRA merged, the rest as the rollout saved it; the
    directory is served and answers openpi's client."""
    pytest.importorskip("openpi_client", reason=NO_OPENPI_CLIENT)
    proc = subprocess.run(
        [sys.executable, "-m", "toolkits.ckpt_convertor.export_policy", "--checkpoint", str(step), "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "LoRA merged" in proc.stdout
    exported = load_file(str(out / "model.safetensors"))
    saved = load_file(str(step / "rollout" / "model.safetensors"))
    assert all("lora_" not in k and "base_layer" not in k for k in exported)
    name = "model.action_out_proj.weight"  # layers without adapters are exported as the rollout saved them
    torch.testing.assert_close(exported[name], saved[name])

    from openpi_client.websocket_client_policy import WebsocketClientPolicy

    from toolkits.deploy.serve_policy import PolicyServer, ServerThread
    from toolkits.deploy.served import ServedPolicy

    with ServerThread(PolicyServer(ServedPolicy(out), port=0)) as thread:
        client = WebsocketClientPolicy("127.0.0.1", thread.server.port)
        assert client.get_server_metadata()["prompts"]["reach-v3"] == "reach the goal position"
        assert client.infer(observation(0))["actions"].shape == (4, 4)
        client._ws.close()


def test_the_pessimistic_recipe_is_the_imagination_twin_without_its_anchor():
    """``rl_metaworld_wm_pessimistic_critic_20demo`` is the twin with no demonstration anchor and a reward of the heads'
    mean less 6 x their spread: nothing else differs, and it needs no demonstrations rebuilt."""
    from policy_and_value.config import load_config

    pessimistic = load_config("rl_metaworld_wm_pessimistic_critic_20demo", [])
    twin = load_config(
        "rl_metaworld_dense_wm_critic_20demo",
        [
            "algorithm.offline_data_coef=0",
            "algorithm.offline_data_path=null",
            "env.train.reward_uncertainty_penalty=6",
            "runner.logger.experiment_name=rl_metaworld_wm_pessimistic_critic_20demo",
        ],
    )
    assert pessimistic.model_dump() == twin.model_dump()
    assert (
        pessimistic.algorithm.offline_data_coef == 0 and pessimistic.env.train.reward_uncertainty_penalty == 6
    )


def test_the_pessimistic_recipe_pays_the_heads_mean_less_six_spreads():
    """The shipped recipe's imagined env (its state model, tasks and starts) against the same env with the plain mean
    reward: the same seeded episode of the same actions, each reward lower by 6 x the heads' spread."""
    from policy_and_value.config import load_config
    from world_models.env import WorldModelEnv

    train = load_config("rl_metaworld_wm_pessimistic_critic_20demo", []).env.train
    cfg = train.model_copy(
        update={"num_envs": 3, "group_size": 1, "max_episode_steps": 12, "auto_reset": False}
    )
    actions = torch.linspace(-0.8, 0.8, 3 * 12 * 4).reshape(3, 12, 4).clamp(-1, 1)
    runs = {}
    for name, penalty in (("pessimistic", 6.0), ("plain", 0.0)):
        env = WorldModelEnv(cfg.model_copy(update={"reward_uncertainty_penalty": penalty}), 3, seed=0)
        env.reset(reset_state_ids=torch.tensor([0, 1, 2]))
        rewards, info = [], {}
        for k in range(0, 12, env.chunk):
            _, r, _, _, info = env.chunk_step(actions[:, k : k + env.chunk])
            rewards.append(r)
        runs[name] = (torch.cat(rewards, 1), info["episode"]["reward_spread"])
        env.close()
    (pessimistic, spread), (plain, plain_spread) = runs["pessimistic"], runs["plain"]
    assert (spread > 0).all() and torch.allclose(spread, plain_spread, rtol=1e-4)
    # an episode's return sums its actions' rewards; reward_spread is the heads' spread per action
    assert torch.allclose(pessimistic.sum(1), plain.sum(1) - 6 * spread * 12, rtol=1e-3, atol=1e-5)
