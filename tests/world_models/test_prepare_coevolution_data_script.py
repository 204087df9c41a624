"""``scripts/prepare_coevolution_data.sh`` rebuilds the episodes co-evolution refits ``state_outcome20_both`` on
(shrunk), and ``rl_metaworld_coevolution_critic_20demo`` runs on them: the imagination recipe from the start on
both kinds of frame in that model, with its rounds; without the data it names the command that builds them."""

import json
import os
import subprocess

import pytest

from tests.assets import REPO

pytestmark = pytest.mark.slow


def test_the_script_merges_three_policies_rollouts_and_the_recipe_takes_them(tmp_path):
    from policy_and_value.config import load_config
    from toolkits.base.errors import ConfigError

    out = tmp_path / "coevolution"
    env = dict(os.environ, EPISODES="1", ROLLOUT_STEPS="8")
    script = str(REPO / "scripts" / "prepare_coevolution_data.sh")
    done = subprocess.run(["bash", script, str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    episodes = json.loads((out / "data" / "index.json").read_text())["episodes"]
    assert len(episodes) == 3 * 3  # three policies x one rollout of each task
    policies = [e["policy"] for e in episodes]
    for start in (
        "metaworld_outcome/policy",
        "metaworld_outcome20/policy",
        "metaworld_outcome20_both/policy",
    ):
        assert sum(p.endswith(start) for p in policies) == 3, (start, policies)
    assert {e["length"] for e in episodes} == {8}
    assert f"coevolution.state_model_data={out}/data" in done.stdout

    anchor = str(REPO / "assets" / "metaworld_outcome" / "demos")  # stands in for the start's rebuilt anchor
    cfg = load_config(
        "rl_metaworld_coevolution_critic_20demo",
        [f"coevolution.state_model_data={out}/data", f"algorithm.offline_data_path={anchor}"],
    )
    twin = load_config(
        "rl_metaworld_dense_wm_critic_20demo",
        [
            "start=outcome20_both",
            f"algorithm.offline_data_path={anchor}",
            "env.train.state_model_config=assets/world_models/state_outcome20_both/model",
            "coevolution.rounds=4",
            "coevolution.steps_per_round=8",
            "coevolution.real_episodes_per_task=4",
            f"coevolution.state_model_data={out}/data",
            "coevolution.refit_steps=300",
            "coevolution.latent_cache=data/coevolution20_both/latent_cache",  # time only: the same latents
            "runner.logger.experiment_name=rl_metaworld_coevolution_critic_20demo",
        ],
    )
    assert cfg.model_dump() == twin.model_dump()  # the measured co-evolution command, nothing else changed
    assert cfg.rollout.model_dir == "assets/metaworld_outcome20_both/policy"
    missing = "data/coevolution20_both/not_built"  # under the folder the config points at, never built
    with pytest.raises(ConfigError, match=r"build it with: bash scripts/prepare_coevolution_data.sh"):
        load_config(
            "rl_metaworld_coevolution_critic_20demo",
            [f"coevolution.state_model_data={missing}", f"algorithm.offline_data_path={anchor}"],
        )
