"""``python -m world_models.train``: both stages, checkpoints, TensorBoard, resume, and config errors."""

from __future__ import annotations

import glob
import os

import torch

from world_models import DynamicsModel
from world_models.train import main

SMALL = ["train.batch_size=2", "train.log_interval=1", "train.save_interval=2", "train.warmup_steps=0",
         "+model.transformer.num_layers=1", "+model.transformer.num_attention_heads=2",
         "+model.transformer.attention_head_dim=8", "+model.transformer.cross_attention_dim=16",
         "+model.context_dim=16"]  # fmt: skip


def test_trains_both_stages_saves_and_resumes(episodes, tmp_path, capsys):
    out = str(tmp_path / "wm")
    args = [f"data.path={episodes}", f"output_dir={out}", "data.holdout_fraction=0.25", *SMALL]
    assert main([*args, "train.vae_steps=2", "train.dynamics_steps=2"]) == 0
    model = DynamicsModel.from_pretrained(os.path.join(out, "model"))
    assert model.cfg.image_size == 32 and model.cfg.num_views == 2 and model.cfg.state_dim == 39
    assert model.cfg.predict_delta and not torch.equal(model.delta_std, torch.ones_like(model.delta_std))
    assert not torch.equal(model.latent_std, torch.ones_like(model.latent_std))  # fitted after the VAE stage
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["latest", "step_2", "step_4"]
    assert glob.glob(os.path.join(out, "**", "events.out.tfevents.*"), recursive=True)
    log = capsys.readouterr().out
    assert "vae step 2/4" in log and "dynamics step 4/4" in log and "heldout_loss" in log
    # a longer run in the same output_dir continues from step 4 (the VAE stage is not repeated)
    assert main([*args, "train.vae_steps=2", "train.dynamics_steps=4"]) == 0
    log = capsys.readouterr().out
    assert "resumed" in log and "step 4" in log and "vae step" not in log and "dynamics step 6/6" in log


def test_bad_config_is_one_line_and_exit_2(episodes, tmp_path, capsys):
    base = [f"output_dir={tmp_path}"]
    assert main([*base, "data.path=/no/such/episodes"]) == 2
    assert "data.path" in capsys.readouterr().err
    assert main([*base, f"data.path={episodes}", "data.tasks=[pick-place-v3]"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "data.tasks" in err and "pick-place-v3" in err
    assert main([*base, f"data.path={episodes}", "model.future_frames=9"]) == 2
    assert "future_frames must be <= action_chunk" in capsys.readouterr().err
    assert main([*base, f"data.path={episodes}", "train.batch_size=0"]) == 2
    assert "train.batch_size" in capsys.readouterr().err


def test_fine_tuning_keeps_the_fitted_statistics(episodes, tmp_path):
    args = [f"data.path={episodes}", "data.holdout_fraction=0.25", *SMALL]
    assert main([*args, f"output_dir={tmp_path / 'a'}", "train.vae_steps=1", "train.dynamics_steps=1"]) == 0
    first = DynamicsModel.from_pretrained(tmp_path / "a" / "model")
    tuned_args = [f"output_dir={tmp_path / 'b'}", f"init_model_dir={tmp_path / 'a' / 'model'}",
                  "train.vae_steps=0", "train.dynamics_steps=1", "train.seed=5"]  # fmt: skip
    assert main([*args, *tuned_args]) == 0
    tuned = DynamicsModel.from_pretrained(tmp_path / "b" / "model")
    for name in ("latent_mean", "latent_std", "delta_std"):
        assert torch.equal(getattr(first, name), getattr(tuned, name)), name
    assert not torch.equal(first.transformer.proj_out.weight, tuned.transformer.proj_out.weight)
