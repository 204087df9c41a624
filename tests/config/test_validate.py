"""Config validation: all shipped configs load and compose; checkpoints, overrides and the CLI are checked before
any work (the table of bad inputs and their one-line errors: test_bad_inputs.py)."""

import subprocess
from pathlib import Path

import pytest

from policy_and_value.config import data_checks, load_config
from policy_and_value.envs.metaworld_tasks import MT10_TASKS, MT50_TASKS
from toolkits.base.compose import CONFIG_DIR, EXPERIMENT_CONFIG_DIR, available_configs
from toolkits.base.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
RESET_EPISODES = REPO / "assets" / "quickstart" / "reset_episodes"  # reach, drawer-close, button-press
# configs that read folders a recipe builds (data_checks.BUILT_BY_RECIPE; each validated with tiny models in the
# recipe's own test): until it has run, validation stops at the first such folder and names the recipe
BUILT_BY_RECIPE = {
    "rl_release_libero",
    "rl_metaworld_dense_critic_20demo",
    "rl_metaworld_dense_wm_critic_20demo",
    "rl_metaworld_mixed_critic_20demo",
    "rl_metaworld_mixed_third_critic_20demo",
    "rl_metaworld_mixed_door_critic_20demo",
    "rl_metaworld_coevolution_critic_20demo",
    "rl_metaworld_obs_outcome_20demo",
    "rl_metaworld_obs_critic_20demo",
    "rl_metaworld_obs_wm_20demo",
    "rl_metaworld_obs2_outcome",
    "rl_metaworld_obs2_value",
    "rl_metaworld_obs2_wm",
    "rl_metaworld_obs2_wm_branch",
    "rl_metaworld_obs2_wm_value",
    "rl_libero_obs_value",
    "rl_libero_obs_wm_value",
    "rl_libero_obs_wm_branch",
    "rl_libero_obs_coevolution",
}


JOBS = sorted(available_configs())
ARMS = sorted(available_configs(EXPERIMENT_CONFIG_DIR))


@pytest.mark.parametrize("name", JOBS + ARMS)
def test_shipped_configs_compose_and_validate(name):
    root = CONFIG_DIR if name in JOBS else EXPERIMENT_CONFIG_DIR
    if "SET_ME" in (root / f"{name}.yaml").read_text():
        # needs the user's models (rl_release_full): validated with them in test_full_size_config.py
        with pytest.raises(ConfigError, match="SET_ME"):
            load_config(name, [])
        return
    if name in BUILT_BY_RECIPE:
        try:
            load_config(name, [])
        except ConfigError as err:  # only a folder the recipe has not built (yet) may be missing
            assert any(f"build it with: {cmd}" in str(err) for cmd in data_checks.BUILT_BY_RECIPE.values()), (
                err
            )
        return
    cfg = load_config(name, [])
    assert cfg.runner.max_steps >= 1


def _parents(path: Path) -> list[str]:
    """The job configs a config's defaults list extends (not group choices such as ``env@env.train: ...``)."""
    import yaml

    defaults = yaml.safe_load(path.read_text()).get("defaults", [])
    return [d for d in defaults if isinstance(d, str) and d != "_self_"]


def _depth(name: str) -> int:
    root = CONFIG_DIR if (CONFIG_DIR / f"{name}.yaml").is_file() else EXPERIMENT_CONFIG_DIR
    return max((1 + _depth(parent) for parent in _parents(root / f"{name}.yaml")), default=0)


def test_a_newcomer_chooses_among_at_most_twelve_jobs_each_with_a_one_line_header():
    """configs/ holds the user-facing jobs only; research arms live in experiments/configs/."""
    assert 1 <= len(JOBS) <= 12, JOBS
    for name, header in available_configs().items():
        assert header and len(header) <= 130, (name, header)
        assert _depth(name) <= 1, name  # a job extends at most one other job (quickstart: rl_release)


@pytest.mark.parametrize("name", ARMS)
def test_a_research_arm_inherits_at_most_two_levels(name):
    assert _depth(name) <= 2, (name, _parents(EXPERIMENT_CONFIG_DIR / f"{name}.yaml"))


def test_an_unknown_config_lists_the_jobs_and_the_research_arms():
    with pytest.raises(
        ConfigError,
        match=r"CONFIG='ppo_pi0_metaword': no such config; jobs: .*ppo_pi0_metaworld.*research arms",
    ):
        load_config("ppo_pi0_metaword", [])


def test_a_config_file_anywhere_composes_the_shipped_groups(tmp_path):
    """A YAML path as CONFIG: its own folder first, then configs/ and experiments/configs/ (groups and parents)."""
    path = tmp_path / "mine.yaml"
    path.write_text("defaults:\n  - ppo_mlp_cartpole\n  - _self_\n\nrunner:\n  max_steps: 3\n")
    cfg = load_config(str(path), [])
    assert cfg.runner.max_steps == 3 and cfg.env.train.tasks == ["CartPole-v1"]


def test_a_logger_backend_that_is_not_installed_is_named_with_its_install_command(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r"logger_backends.*wandb.*pip install wandb"):
        load_config("ppo_mlp_cartpole", ["runner.logger.logger_backends=[wandb]"])


def test_overrides_need_not_know_which_keys_a_file_sets():
    """``key=value`` adds a key no file sets, ``+key=value`` sets one a file already has."""
    cfg = load_config("quickstart", ["runner.progress_bar=false", "+model.pi0.noise_level=0.2"])
    assert cfg.runner.progress_bar is False and cfg.model.pi0["noise_level"] == 0.2


def test_value_overrides_go_to_hydra_as_set_or_add_and_group_choices_as_written():
    from toolkits.base.compose import set_or_add

    given = [
        "a.b=1",
        "+c=2",
        "++d=3",
        "~e",
        "cluster=separate",
        "env@env.train=metaworld_3tasks",
        "+model=pi0_tiny",
    ]
    assert set_or_add(given, {"cluster", "env", "model"}) == [
        "++a.b=1", "++c=2", "++d=3", "~e", "cluster=separate", "env@env.train=metaworld_3tasks", "+model=pi0_tiny",
    ]  # fmt: skip
    cfg = load_config(
        "rl_release_video", ["env@env.train=metaworld_3tasks", "cluster=shared", "runner.max_steps=3"]
    )
    assert cfg.env.train.env_type == "metaworld" and cfg.runner.max_steps == 3


def test_placement_override_replaces_the_configs_placement():
    cfg = load_config("rl_release_video", ["cluster.component_placement={env: 0, rollout: 0, actor: 0}"])
    assert cfg.cluster.component_placement == {"env": 0, "rollout": 0, "actor": 0}


def test_task_table_matches_installed_metaworld():
    # Meta-World's own benchmark tables (building metaworld.MT50() instead takes over a minute)
    from metaworld.env_dict import MT10_V3, MT50_V3

    assert set(MT50_TASKS) == set(MT50_V3)
    assert list(MT10_TASKS) == list(MT10_V3)


@pytest.fixture()
def checkpoint_missing_actor(tmp_path):
    d = tmp_path / "global_step_3"
    d.mkdir()
    from toolkits.base.checkpoint import save_runner_state

    save_runner_state(str(d), 3, {})
    return str(d)


def test_resume_dir_that_is_not_a_checkpoint(checkpoint_missing_actor):
    with pytest.raises(ConfigError, match=r"actor/\.metadata: missing"):
        load_config("ppo_mlp_cartpole", [f"runner.resume_dir={checkpoint_missing_actor}"])


@pytest.fixture()
def complete_checkpoint(tmp_path):
    """A small checkpoint laid out as the runner writes one: runner state, actor DCP, rollout safetensors."""
    import torch

    from tests.assets import write_complete_checkpoint

    weights = {"w": torch.randn(64, 64), "b": torch.randn(64)}
    return write_complete_checkpoint(tmp_path / "global_step_3", 3, weights)


@pytest.mark.parametrize(
    "damaged", ["runner_state.pt", "actor/__0_0.distcp", "actor/.metadata", "rollout/model.safetensors"]
)
def test_truncated_checkpoint_file_is_named_before_ray_starts(complete_checkpoint, damaged):
    load_config("ppo_mlp_cartpole", [f"runner.resume_dir={complete_checkpoint}"])  # complete: accepted
    path = complete_checkpoint / damaged
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ConfigError) as e:
        load_config("ppo_mlp_cartpole", [f"runner.resume_dir={complete_checkpoint}"])
    assert "\n" not in str(e.value) and f"{path}:" in str(e.value), str(e.value)


def test_cli_rejects_bad_override_with_exit_2_before_starting_ray():
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "run_embodiment.sh"), "ppo_mlp_cartpole", "actor.micro_batch_size=0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == "config error: actor.micro_batch_size=0: input should be greater than or equal to 1"
    )
    assert "ray" not in proc.stdout.lower()


def test_cli_help_lists_configs():
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "run_embodiment.sh"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0
    for name in ("ppo_cnn_metaworld", "ppo_mlp_cartpole", "grpo_cnn_metaworld"):
        assert name in proc.stdout


def test_policy_config_name_is_checked_against_the_saved_policy(tmp_path):
    from policy_and_value.models.pi0.configuration_pi0 import make_config

    saved = tmp_path / "il_policy"
    saved.mkdir()
    make_config("tiny", action_dim=4, state_dim=39, max_state_dim=39).save(saved / "config.json")
    base = [f"rollout.model_dir={saved}"]
    cfg = load_config("ppo_pi0_metaworld", [*base, "algorithm.policy_config_name=tiny"])
    assert cfg.algorithm.policy_config_name == "tiny"
    make_config("tiny_pi05", action_dim=4, state_dim=39, max_state_dim=39).save(saved / "config.json")
    with pytest.raises(ConfigError) as e:
        load_config("ppo_pi0_metaworld", [*base, "algorithm.policy_config_name=tiny"])
    msg = str(e.value)
    assert "\n" not in msg and "algorithm.policy_config_name='tiny'" in msg and "pi05: False -> True" in msg
    with pytest.raises(ConfigError, match="expert.width: 32 -> 48"):
        make_config("tiny", action_dim=4, state_dim=39, max_state_dim=39, expert={"width": 48, "depth": 2, "mlp_dim": 64,
                    "num_heads": 4, "num_kv_heads": 1, "head_dim": 16}).save(saved / "config.json")  # fmt: skip
        load_config("ppo_pi0_metaworld", [*base, "algorithm.policy_config_name=tiny"])
    with pytest.raises(ConfigError, match="allowed values"):
        load_config("ppo_pi0_metaworld", ["algorithm.policy_config_name=pi0_libero"])
    with pytest.raises(ConfigError, match="model.pi0.preset is 'tiny'"):
        load_config("ppo_pi0_metaworld", ["algorithm.policy_config_name=pi05", "model.pi0.preset=tiny"])
    with pytest.raises(ConfigError, match="only used with model.policy_type pi0"):
        load_config("ppo_cnn_metaworld", ["algorithm.policy_config_name=tiny"])


def test_num_group_envs_sets_the_number_of_train_envs():
    cfg = load_config(
        "ppo_cnn_metaworld",
        ["algorithm.num_group_envs=3", "actor.global_batch_size=75", "actor.micro_batch_size=25"],
    )
    assert cfg.env.train.num_envs == 3  # 3 groups x group_size 1 x 1 env rank x 1 stage
    cfg = load_config("grpo_cnn_metaworld", ["algorithm.num_group_envs=2"])
    assert cfg.env.train.num_envs == 2 * cfg.algorithm.group_size
    with pytest.raises(ConfigError, match=r"algorithm.num_group_envs=4: gives 4 train envs .* add up to 6"):
        load_config(
            "ppo_cnn_metaworld", ["algorithm.num_group_envs=4", "env.train.groups=[{name:a,num_envs:6}]"]
        )


def test_offline_data_covering_the_train_tasks_and_cameras_is_accepted():
    overrides = [
        "algorithm.offline_data_coef=0.5", f"algorithm.offline_data_path={RESET_EPISODES}",
        "env.train.tasks=[reach-v3,drawer-close-v3]", "env.train.cameras=[gripperPOV]",
    ]  # fmt: skip
    cfg = load_config("ppo_pi0_metaworld", overrides)
    assert cfg.algorithm.offline_data_coef == 0.5
    assert load_config("ppo_pi0_metaworld", []).algorithm.offline_data_coef == 0.0  # off by default


def test_a_sharded_optimiser_checkpoint_needs_every_rank_file(complete_checkpoint):
    import torch

    from toolkits.base.checkpoint import CheckpointError, verify_checkpoint

    for rank in (0, 1):
        torch.save(
            {"state": {}, "param_groups": []},
            complete_checkpoint / "actor" / f"optimizer_shard_{rank}_of_2.pt",
        )
    verify_checkpoint(str(complete_checkpoint))
    (complete_checkpoint / "actor" / "optimizer_shard_1_of_2.pt").unlink()
    with pytest.raises(
        CheckpointError, match=r"optimizer_shard_1_of_2.pt: missing \(the optimiser was sharded over 2"
    ):
        verify_checkpoint(str(complete_checkpoint))
    with pytest.raises(ConfigError, match=r"actor.shard_optimizer=False: .* sharded over 2 actor ranks"):
        load_config("ppo_mlp_cartpole", [f"runner.resume_dir={complete_checkpoint}"])


def test_the_critic_group_puts_the_critic_recipe_on_another_job():
    """``+critic=state`` on the GRPO recipe gives the critic recipe (both read experiments/configs/critic/state.yaml)."""
    recipe = load_config("rl_metaworld_dense_critic", [])
    added = load_config(
        "rl_metaworld_dense_ppo",
        ["+critic=state", "runner.max_steps=32", "runner.logger.experiment_name=rl_metaworld_dense_critic"],
    )
    assert added.model.pi0["value_from_state"] and added.algorithm.adv_type == "gae"
    assert added.model_dump() == recipe.model_dump()


def test_a_missing_folder_a_recipe_builds_names_that_recipe():
    with pytest.raises(
        ConfigError,
        match=r"offline_data_path.*build it with: worldrl recipe outcome-start --out data/outcome_start20",
    ):
        load_config(
            "rl_metaworld_dense_critic_20demo", ["algorithm.offline_data_path=data/outcome_start20/gone"]
        )
    with pytest.raises(
        ConfigError, match=r"offline_data_path.*write one with python -m toolkits.collect_episodes"
    ):
        load_config("rl_metaworld_dense_critic_20demo", ["algorithm.offline_data_path=data/elsewhere"])


def test_overrides_stand_anywhere_among_a_benchmark_s_options():
    """``parse_with_overrides``: ``key=value`` arguments are the job's overrides wherever they stand, except as an
    option's single value; a misspelt option stops the parser instead of passing for an override."""
    import argparse

    from toolkits.base.cli import parse_with_overrides

    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, nargs="+")
    p.add_argument("--arm-name")
    p.add_argument("--no-real-ppo", action="store_true")
    args, overrides = parse_with_overrides(
        p, ["a.b=1", "--seeds", "0", "1", "c=2", "--arm-name", "x=y", "--no-real-ppo", "d=[1,2]"]
    )
    assert args.seeds == [0, 1] and args.arm_name == "x=y" and args.no_real_ppo
    assert overrides == ["a.b=1", "c=2", "d=[1,2]"]
    with pytest.raises(SystemExit):
        parse_with_overrides(p, ["--sedes", "0", "a=1"])
