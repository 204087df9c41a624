"""The dynamics model on tiny sizes: shapes, history and action conditioning, determinism, save/load."""

from __future__ import annotations

import pytest
import torch

from tests.world_models.conftest import PROMPTS, tiny_dynamics
from world_models import DynamicsModel, make_config

P = list(PROMPTS.values())


def _inputs(n: int = 2, views: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    hist = torch.randint(0, 256, (n, 2, views, 32, 32, 3), dtype=torch.uint8, generator=g)
    return hist, torch.randn(n, 39, generator=g), torch.rand(n, 4, 4, generator=g) * 2 - 1


def _imagine(model, hist, state, actions, seed=0):
    return model.imagine(hist, state, actions, P[: len(hist)], generator=torch.Generator().manual_seed(seed))


def test_shapes_with_and_without_state_and_prompt():
    model = tiny_dynamics()
    hist, state, actions = _inputs()
    out = _imagine(model, hist, state, actions)
    assert out["images"].shape == (2, 4, 2, 32, 32, 3) and out["images"].dtype == torch.uint8
    assert out["state"].shape == (2, 39)
    bare = tiny_dynamics(num_views=1, state_dim=0, predict_state=False, prompts=[])
    out = bare.imagine(hist[:, :, :1], None, actions, None)
    assert out["images"].shape == (2, 4, 1, 32, 32, 3) and out["state"] is None


def test_deterministic_under_a_seed_and_conditioned_on_history_and_actions():
    model = tiny_dynamics()
    with torch.no_grad():  # open the zero-initialised output paths a little so every input matters
        for p in model.transformer.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    hist, state, actions = _inputs()
    base = _imagine(model, hist, state, actions)["images"]
    assert torch.equal(base, _imagine(model, hist, state, actions)["images"])
    assert not torch.equal(base, _imagine(model, hist, state, actions, seed=1)["images"])
    other_hist = hist.clone()
    other_hist[:, 0] = 255 - other_hist[:, 0]
    assert not torch.equal(base, _imagine(model, other_hist, state, actions)["images"])
    assert not torch.equal(base, _imagine(model, hist, state, -actions)["images"])


def test_save_load_round_trip_and_strict_keys(tmp_path):
    from safetensors.torch import load_file, save_file

    model = tiny_dynamics()
    model.latent_std.fill_(2.0)  # buffers travel too
    hist, state, actions = _inputs()
    model.save_pretrained(tmp_path / "m")
    loaded = DynamicsModel.from_pretrained(tmp_path / "m")
    assert torch.equal(
        _imagine(loaded, hist, state, actions)["images"], _imagine(model, hist, state, actions)["images"]
    )
    weights = load_file(str(tmp_path / "m" / "model.safetensors"))
    weights["surprise.weight"] = torch.zeros(1)
    save_file(weights, str(tmp_path / "m" / "model.safetensors"))
    with pytest.raises(KeyError, match="unexpected keys \\['surprise.weight'\\]"):
        DynamicsModel.from_pretrained(tmp_path / "m")


def test_ltx_2b_preset_has_the_published_transformer_size():
    with torch.device("meta"):
        model = DynamicsModel(make_config("ltx_2b"))
    params = sum(p.numel() for p in model.transformer.parameters())
    assert 1.85e9 < params < 2.0e9  # LTX-Video 2B: 28 layers, 32 heads x 64
    assert model.cfg.num_views == 3


def test_bad_config_is_a_clear_error():
    with pytest.raises(ValueError, match="future_frames must be <= action_chunk"):
        make_config("tiny", future_frames=8, action_chunk=4)
    with pytest.raises(ValueError, match="unknown dynamics-model config keys \\['frames'\\]"):
        make_config("tiny", frames=3)


def test_training_reduces_the_losses():
    model = tiny_dynamics().train()
    hist, state, actions = _inputs(2, seed=3)
    future = torch.zeros(2, 4, 2, 32, 32, 3, dtype=torch.uint8)  # a bright square that moves right
    for t in range(4):
        future[:, t, :, 8:16, 4 + 4 * t : 12 + 4 * t] = 220

    def probe() -> tuple[float, float]:
        with torch.no_grad():
            vae = float(model.vae_loss(future)["recon_mse"])
            gen = torch.Generator().manual_seed(9)
            flow = model.training_loss(hist, future, actions, state, state, P, generator=gen)
        return vae, float(flow["flow"])

    vae0, _ = probe()
    opt = torch.optim.AdamW(model.vae.parameters(), lr=3e-3)
    for _ in range(30):  # stage 1: the VAE
        loss = model.vae_loss(future)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.fit_latent_stats(future.flatten(0, 1))
    vae1, flow0 = probe()
    rest = [p for n, p in model.named_parameters() if not n.startswith("vae.")]
    opt = torch.optim.AdamW(rest, lr=3e-3)
    for _ in range(30):  # stage 2: the denoiser, VAE frozen
        loss = model.training_loss(hist, future, actions, state, state, P)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    _, flow1 = probe()
    assert vae1 < 0.5 * vae0 and flow1 < 0.8 * flow0


def test_shipped_model_matches_its_checksums_and_loads():
    from pathlib import Path

    from tests.assets import assert_matches_sha256sums

    root = Path(__file__).resolve().parents[2] / "assets" / "world_models" / "tiny_3tasks"
    assert assert_matches_sha256sums(root) == 2
    model = DynamicsModel.from_pretrained(root)
    assert model.cfg.num_views == 2 and model.cfg.predict_delta and len(model.cfg.prompts) == 3
