"""Collecting LIBERO episodes with the scripted LIBERO-Object expert (a short horizon: it succeeds in
about 115 steps on this task), and the collector's one-line errors for LIBERO arguments."""

import pytest

from toolkits.collect_episodes import main
from toolkits.episodes import EpisodeDataset

pytestmark = pytest.mark.slow
TASK = "pick_up_the_alphabet_soup_and_place_it_in_the_basket"


def test_the_expert_succeeds_and_its_episode_is_written(tmp_path):
    out = tmp_path / "eps"
    argv = ["--suite", "libero_object", "--tasks", TASK, "--episodes-per-task", "1", "--num-envs", "1",
            "--image-size", "16", "--max-episode-steps", "160", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    ds = EpisodeDataset(str(out))
    ep = ds[0]
    assert ep.meta["success_once"] and ep.success[-1] and ep.length < 160  # success ends the episode
    assert ep.images.shape == (ep.length + 1, 2, 16, 16, 3) and ep.state.shape == (ep.length + 1, 8)
    assert ep.actions.shape == (ep.length, 7) and ep.meta["cameras"] == ["agentview", "robot0_eye_in_hand"]
    assert ep.meta["prompt"] == "pick up the alphabet soup and place it in the basket"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["--suite", "libero_object", "--tasks", "pick_up_the_soup"],
            "--tasks=pick_up_the_soup: allowed: task names",
        ),
        (["--suite", "libero_goal"], "--suite=libero_goal: allowed: libero_object"),
        (["--suite", "libero_object", "--cameras", "corner"], "--cameras=corner: allowed: agentview"),
        (
            ["--tasks", "reach-v3", "--start-states", "heldout"],
            "--start-states=heldout: allowed: all with Meta-World",
        ),
    ],
)
def test_bad_libero_arguments_are_one_line(tmp_path, capsys, argv, fragment):
    with pytest.raises(SystemExit) as e:
        main([*argv, "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "\n" not in err and fragment in err


def test_the_expert_aligns_before_descending_and_holds_the_bottle_by_its_cap():
    import numpy as np

    from toolkits.experts import LiberoPickPlacePolicy

    raw = {"robot0_eef_pos": np.array([0.005, 0.0, 0.193]), "salad_dressing_1_pos": np.zeros(3),
           "basket_1_pos": np.array([0.0, 0.3, 0.0])}  # fmt: skip
    expert = LiberoPickPlacePolicy("salad_dressing_1")
    expert.get_action(raw)
    assert expert.phase == 0  # within 1 cm of the point above, but 5 mm sideways: not yet
    raw["robot0_eef_pos"] = np.array([0.002, 0.0, 0.12])
    expert.get_action(raw)
    assert expert.phase == 1
    action = expert.get_action({**raw, "robot0_eef_pos": np.array([0.0, 0.0, 0.045])})
    assert np.allclose(action[:3], 0) and expert.phase == 2  # at the cap's height the descent is over
