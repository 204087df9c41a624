"""``worldrl recipe libero-observation-model`` for real at tiny sizes on LIBERO-shaped demonstrations made here
(``--episodes-dir``): the imitation start, its rollouts in LIBERO on the training and the held-out init states, the
cameras' VAE and the observation model, trained in the observation-only setting; a re-run skips every stage."""

import json

import numpy as np
import pytest

from toolkits.recipes import libero_observation
from toolkits.recipes.libero_loop import TASKS

pytestmark = pytest.mark.slow  # LIBERO envs take seconds to build
CAMERAS = ["agentview", "robot0_eye_in_hand"]


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> str:
    """Two demonstrations a task (one successful): 64-px frames of both cameras, LIBERO's 8-number state."""
    from toolkits.episodes import Episode, EpisodeWriter

    path = str(tmp_path_factory.mktemp("libero_obs") / "demos")
    writer = EpisodeWriter(path, info={"cameras": CAMERAS, "image_size": 64})
    rng = np.random.default_rng(0)
    for task in TASKS:
        for i in range(2):
            t = 12
            success = np.zeros(t, bool)
            success[-1] = i == 0
            meta = {
                "prompt": task.replace("_", " "),
                "task": task,
                "success_once": i == 0,
                "cameras": CAMERAS,
                "image_size": 64,
            }
            writer.write(Episode(rng.integers(0, 255, (t + 1, 2, 64, 64, 3), dtype=np.uint8),
                                 rng.normal(size=(t + 1, 8)).astype(np.float32), rng.uniform(-1, 1, (t, 7)).astype(np.float32),
                                 success.astype(np.float32), success, meta))  # fmt: skip
    writer.close({})
    return path


def test_the_recipe_builds_an_observation_model_from_libero_recordings(demos, tmp_path, capsys):
    out = tmp_path / "obs"
    argv = ["--out", str(out), "--episodes-dir", demos, "--max-episode-steps", "8", "--rm-steps", "2",
            "--il-steps", "2", "--rollouts", "1", "--heldout", "1", "--vae-steps", "2", "--steps", "2",
            "--components", "8"]  # fmt: skip
    assert libero_observation.main(argv) == 0
    printed = capsys.readouterr().out
    assert "libero-observation-model: done in" in printed and "demonstrations" not in printed  # given
    for name, starts in (("rollouts", "train"), ("heldout_rollouts", "heldout")):
        index = json.loads((out / name / "index.json").read_text())
        assert index["info"]["start_states"] == starts and len(index["episodes"]) == 3  # one a task
        assert all(e["policy"].startswith("pi0 ") for e in index["episodes"])
    config = json.loads((out / "wmB" / "model" / "config.json").read_text())
    assert config["value_head"] and config["latent_components"] == 8
    assert config["state_dim"] == 8 + 8  # LIBERO's 8 proprioception numbers whole, and the code
    assert (out / "vae" / "model" / "config.json").is_file()
    assert libero_observation.main(argv) == 0  # a re-run: every stage's output is there
    assert capsys.readouterr().out.count("exists, skipped") == 6


def test_missing_demonstrations_are_one_line_before_any_work(tmp_path, capsys):
    code = libero_observation.main(["--out", str(tmp_path / "x"), "--episodes-dir", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--episodes-dir=" in err and not (tmp_path / "x").exists()
