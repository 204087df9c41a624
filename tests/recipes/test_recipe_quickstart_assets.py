"""``worldrl recipe quickstart-assets`` (the video loop's starting models from scratch) runs end to end in Python,
shrunk, and rl_release_video validates on what it made."""

import pytest

from toolkits.recipes import quickstart_assets

pytestmark = pytest.mark.slow


def test_the_recipe_builds_every_model_the_quickstart_reads(tmp_path, capsys):
    from policy_and_value.config import load_config

    out = tmp_path / "qs"
    argv = ["--out", str(out), "--episodes", "1", "--rm-steps", "2", "--il-steps", "2", "--vae-steps", "2",
            "--dyn-steps", "2"]  # fmt: skip
    assert quickstart_assets.main(argv) == 0
    printed = capsys.readouterr().out
    assert "quickstart-assets: done in" in printed and "world model: denoiser" in printed
    for path in ("sft/policy/deploy.json", "rm/model/config.json", "wm/model/config.json",
                 "offline_episodes/index.json", "reset_episodes/index.json"):  # fmt: skip
        assert (out / path).is_file(), path
    command = printed.split("bash scripts/run_embodiment.sh rl_release_video ", 1)[1].splitlines()[0]
    cfg = load_config("rl_release_video", command.split())  # the printed command points at the rebuilt models
    assert cfg.rollout.model_dir == f"{out}/sft/policy"
    assert cfg.env.train.dynamics_model_config == f"{out}/wm/model"
