"""plan_frames.py pictures each start's imagined plan beside its replay in Meta-World: two rows a start, a column
every ``--every`` chunks and one at the end, the real row's first frame the start's own frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from experiments.harness import plan_frames

ROOT = Path(__file__).resolve().parents[2]
RESET_EPISODES = ROOT / "assets" / "quickstart" / "reset_episodes"  # 2 episodes per quickstart task


def test_two_rows_a_start_and_a_column_a_shown_chunk(tmp_path, capsys):
    out = tmp_path / "plans.png"
    argv = ["--config", "rl_release_video", "--starts", str(RESET_EPISODES), "--starts-per-task", "1", "--episode-steps",
            "12", "--every", "2", "--out", str(out)]  # fmt: skip
    assert plan_frames.main(argv) == 0
    picture = np.asarray(Image.open(out))
    # 3 tasks x 1 start x (imagined, real) rows of 64 px frames drawn at 2x; chunks 0, 2 and the last (3)
    assert picture.shape == (6 * 128, 3 * 128, 3)
    imagined_start, real_start = picture[16:128, :128], picture[144:256, :128]  # below the labels
    assert np.abs(imagined_start.astype(int) - real_start.astype(int)).mean() < 8  # the same start frame
    printed = capsys.readouterr().out
    assert printed.count("highest imagined score") == 3 and "3 starts x (imagined, real)" in printed
