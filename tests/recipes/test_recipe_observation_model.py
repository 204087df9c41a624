"""``worldrl recipe observation-model`` (a world model from what a robot records, gauged) runs end to end in Python,
shrunk, from an observation-only start the test builds with ``outcome-start --state-type proprio``."""

import pytest

from tests.recipes.refusals import assert_refused_before_any_work
from toolkits.recipes import observation_model, outcome_start
from world_models.state_model import StateModel

pytestmark = pytest.mark.slow
GAUGED = "3 starts x 2 samples, 8-step episodes"  # the gauge's last line at these sizes


def test_the_recipe_trains_an_observation_model_and_gauges_it(tmp_path, capsys):
    start = tmp_path / "start"
    argv = ["--out", str(start), "--episodes", "1", "--demos", "1", "--sft-steps", "2", "--eval-episodes", "1",
            "--num-envs", "3", "--state-type", "proprio"]  # fmt: skip
    assert outcome_start.main(argv) == 0
    out = tmp_path / "obs_wm"
    argv = ["--out", str(out), "--policy-dir", str(start / "sft" / "policy"), "--demos", str(start / "demos"),
            "--episodes", "1", "--components", "4", "--steps", "2", "--starts", "1", "--gauge-starts", "1",
            "--gauge-samples", "2", "--gauge-steps", "8", "--encoder", "learned", "--value-head"]  # fmt: skip
    assert observation_model.main(argv) == 0
    printed = capsys.readouterr().out
    model = StateModel.from_pretrained(out / "model" / "model")
    assert model.cfg.latent_components == 4 and model.proprio_dim == 4 and not model.cfg.reward_head
    assert model.learned_codec and model.cfg.value_head  # design B with a value head, as shipped
    assert "observation-model: done in" in printed and GAUGED in printed
    assert "success classifier, real states" in printed  # the head on the real frames, the gauge's ceiling
    assert f"env.train.state_model_config={out}/model/model" in printed


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--policy-dir", "{tmp}/nowhere"], "--policy-dir='{tmp}/nowhere': no config.json; expected a policy directory"),
        (["--components", "0"], "--components='0': input should be greater than 0"),
        (["--encoder", "vq"], "--encoder='vq': input should be 'pca' or 'learned'"),
        (["--tasks", "reach-v9"], "--tasks='reach-v9': not a Meta-World (MT50) task"),
    ],
)  # fmt: skip
def test_bad_inputs_are_one_line_before_any_work(flags, message, tmp_path, capsys):
    assert_refused_before_any_work(observation_model.main, flags, message, tmp_path, capsys)
