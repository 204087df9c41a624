"""``worldrl recipe coevolution-data`` rebuilds the episodes co-evolution refits ``state_outcome20_both`` on (shrunk),
and ``rl_metaworld_coevolution_critic_20demo`` runs on them; without the data the job names the recipe."""

import json

import pytest

from tests.assets import REPO
from toolkits.recipes import coevolution_data

pytestmark = pytest.mark.slow


def test_the_recipe_merges_three_policies_rollouts_and_the_job_takes_them(tmp_path, capsys):
    from policy_and_value.config import load_config
    from toolkits.base.errors import ConfigError
    from toolkits.recipes.coevolution_checks import check_coevolution

    out = tmp_path / "coevolution"
    assert coevolution_data.main(["--out", str(out), "--episodes", "1", "--rollout-steps", "8"]) == 0
    printed = capsys.readouterr().out
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
    assert f"coevolution.state_model_data={out}/data" in printed
    assert "coevolution-data: done in" in printed and "both-frames rollouts" in printed

    anchor = str(REPO / "assets" / "metaworld_outcome" / "demos")  # stands in for the start's rebuilt anchor
    cfg = load_config(
        "rl_metaworld_coevolution_critic_20demo",
        [f"coevolution.state_model_data={out}/data", f"algorithm.offline_data_path={anchor}"],
    )
    assert cfg.rollout.model_dir == "assets/metaworld_outcome20_both/policy"
    assert cfg.coevolution.state_model_data == f"{out}/data"
    check_coevolution(cfg)  # what the job checks before its first round
    missing = "data/coevolution20_both/not_built"  # under the folder the config points at, never built
    cfg = load_config(
        "rl_metaworld_coevolution_critic_20demo",
        [f"coevolution.state_model_data={missing}", f"algorithm.offline_data_path={anchor}"],
    )
    with pytest.raises(ConfigError, match=r"build it with: worldrl recipe coevolution-data"):
        check_coevolution(cfg)


def test_an_existing_output_folder_is_refused_before_any_work(tmp_path, capsys):
    assert coevolution_data.main(["--out", str(tmp_path), "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"config error: --out={str(tmp_path)!r}: exists; choose a new directory"
    assert coevolution_data.main(["--out", str(tmp_path / "x"), "--episodes", "0"]) == 2
    assert "--episodes='0': input should be greater than 0" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
