"""``worldrl recipe libero-observation-model`` for real at tiny sizes on LIBERO-shaped demonstrations made here
(``--episodes-dir``): the imitation start, its rollouts in LIBERO on the training and the held-out init states, the
cameras' VAE and the observation model, trained in the observation-only setting, then its plans replayed in LIBERO and
a warm refit on them; a re-run skips every stage."""

import json

import pytest

from tests.recipes.libero_episodes import write_libero_episodes
from toolkits.recipes import libero_observation

pytestmark = pytest.mark.slow  # LIBERO envs take seconds to build


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> str:
    """Two demonstrations a task (one successful)."""
    return write_libero_episodes(tmp_path_factory.mktemp("libero_obs") / "demos")


def test_the_recipe_builds_an_observation_model_from_libero_recordings(demos, tmp_path, capsys):
    out = tmp_path / "obs"
    argv = ["--out", str(out), "--episodes-dir", demos, "--max-episode-steps", "8", "--rm-steps", "2",
            "--il-steps", "2", "--rollouts", "1", "--heldout", "1", "--vae-steps", "2", "--steps", "2",
            "--components", "8", "--plans", "1", "--plan-steps", "2"]  # fmt: skip
    assert libero_observation.main(argv) == 0
    printed = capsys.readouterr().out
    assert "libero-observation-model: done in" in printed and "demonstrations" not in printed  # given
    for name, starts in (("rollouts", "train"), ("heldout_rollouts", "heldout")):
        index = json.loads((out / name / "index.json").read_text())
        assert index["info"]["start_states"] == starts and len(index["episodes"]) == 3  # one a task
        assert all(e["policy"].startswith("pi0 ") for e in index["episodes"])
    config = json.loads((out / "observation_model" / "model" / "config.json").read_text())
    assert config["value_head"] and config["latent_components"] == 8 and config["latent_encoder"] == "pca"
    assert config["state_dim"] == 8 + 8  # LIBERO's 8 proprioception numbers whole, and the code
    assert (out / "vae" / "model" / "config.json").is_file()
    # planned in imagination, replayed
    for name, starts in (("plans", "train"), ("heldout_plans", "heldout")):
        index = json.loads((out / name / "index.json").read_text())
        assert index["info"]["start_states"] == starts and len(index["episodes"]) == 3
        for e in index["episodes"]:
            assert "imagined_return" in e and "planned in the world model" in e["policy"]
    # the held-out plans are the refitted model's
    assert "plans_model/model" in index["episodes"][0]["policy"]
    refit = json.loads((out / "plans_model" / "model" / "config.json").read_text())
    assert refit["latent_components"] == 8 and refit["value_head"]
    assert libero_observation.main(argv) == 0  # a re-run: every stage's output is there
    assert capsys.readouterr().out.count("exists, skipped") == 10


def test_missing_demonstrations_are_one_line_before_any_work(tmp_path, capsys):
    code = libero_observation.main(["--out", str(tmp_path / "x"), "--episodes-dir", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--episodes-dir=" in err and not (tmp_path / "x").exists()
