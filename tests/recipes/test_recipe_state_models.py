"""``worldrl recipe state-outcome`` (the rebuild of assets/world_models/state_outcome) and ``worldrl recipe
refit-state-model`` (that model aligned with a new start policy) run end to end in Python, shrunk: the refit starts
from the model and the rollouts the first one made."""

import contextlib
import io
import json
from pathlib import Path

import pytest

from tests.assets import REPO
from tests.recipes.refusals import assert_refused_before_any_work
from toolkits.recipes import refit_state_model, state_outcome

pytestmark = pytest.mark.slow
GAUGE = ["--gauge-starts", "1", "--gauge-samples", "2", "--gauge-steps", "8"]
GAUGED = "3 starts x 2 samples, 8-step episodes"  # the gauge's last line at these sizes
POLICY = str(REPO / "assets" / "metaworld_outcome" / "policy")
DEMOS = str(REPO / "assets" / "metaworld_outcome" / "demos")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """state-outcome's folder and what it printed."""
    out = tmp_path_factory.mktemp("recipes") / "state_outcome"
    argv = ["--out", str(out), "--episodes", "1", "--rollout-steps", "8", "--state-steps", "2", "--render-steps", "2",
            "--head-steps", "2", "--long-steps", "2", "--starts", "1", *GAUGE]  # fmt: skip
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # a module fixture has no capsys
        code = state_outcome.main(argv)
    assert code == 0, printed.getvalue()[-3000:]
    return out, printed.getvalue()


def test_state_outcome_writes_both_models_and_gauges_them(built):
    out, printed = built
    for model in ("states", "train", "long"):
        assert (out / model / "model" / "model.safetensors").is_file()
    assert (out / "rollouts" / "index.json").is_file()  # what coevolution.state_model_data takes
    assert "state-outcome: done in" in printed and printed.count(GAUGED) == 2  # the gauge and the dense gauge
    assert f"env.train.state_model_config={out}/train/model" in printed


def test_refit_writes_its_models_and_gauges_each(built, tmp_path, capsys):
    base, _ = built
    out = tmp_path / "refit"
    argv = ["--policy-dir", POLICY, "--out", str(out), "--base-model", str(base / "train" / "model"), "--base-data",
            str(base / "rollouts"), "--extra-data", DEMOS, "--episodes", "1", "--rollout-steps", "8", "--steps", "2",
            "--long-steps", "2", "--plans", "1", "--plan-steps", "2", "--gauge-seeds", "0", *GAUGE]  # fmt: skip
    assert refit_state_model.main(argv) == 0
    printed = capsys.readouterr().out
    for model in ("model", "long/model", "plans/model"):  # the refit, the longer-trained one, on its plans
        assert (out / model / "model.safetensors").is_file()
    assert "refit-state-model: done in" in printed
    merged = json.loads((out / "data" / "index.json").read_text())["episodes"]
    assert len(merged) == 3 + 3 + 6  # the base data, the policy's 3 rollouts, the extra data
    assert (
        printed.count(GAUGED) == 4
    )  # the base model's gauge, the refitted one's, the longer-trained one's, the plans'
    plans = json.loads((out / "plan_rollouts" / "index.json").read_text())["episodes"]
    assert len(plans) == 3
    assert f"planned in the world model of {out}/long/model " in plans[0]["policy"]  # the longer-trained one
    assert f"state_model_config={out}/plans/model" in printed  # the model to train in


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--policy-dir", "{tmp}/nowhere"], "--policy-dir='{tmp}/nowhere': no config.json; expected a policy directory"),
        (["--policy-dir", POLICY, "--extra-data", DEMOS, "{tmp}/nowhere"],
         "--extra-data='{tmp}/nowhere': no index.json; expected episode directories"),
        (["--policy-dir", POLICY, "--base-model", str(REPO / "assets/world_models/state_outcome20/model")],
         "--base-data is not set with --base-model="),
        (["--policy-dir", POLICY, "--noise", "-1"], "--noise='-1': input should be greater than 0"),
    ],
)  # fmt: skip
def test_refit_refuses_bad_inputs_in_one_line_before_any_work(flags, message, tmp_path, capsys):
    assert_refused_before_any_work(refit_state_model.main, flags, message, tmp_path, capsys)
