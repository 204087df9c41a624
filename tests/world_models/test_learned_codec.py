"""Design B of the observation model (``model.latent_encoder=learned``): a code learned with the dynamics from the
frames' VAE latents, bounded, decoded with the proprioception; its training CLI, its losses and the world-model env
imagining with it."""

from __future__ import annotations

import pytest
import torch

from tests.world_models.conftest import PROMPTS, tiny_dynamics
from tests.world_models.test_env import _actions
from tests.world_models.test_observation_model import OBSERVATION, _observation_env
from tests.world_models.test_state_model import SMALL, rule_episodes  # noqa: F401 - the fixture
from toolkits.episodes import EpisodeDataset
from world_models.state_data import StateWindows
from world_models.state_model import StateModel, StateModelConfig
from world_models.train_learned_codec import codec_losses, frame_batch, set_statistics, success_frames
from world_models.train_state_model import main

LEARNED = [*OBSERVATION, "model.latent_encoder=learned"]


def _learned(shape: list[int], seed: int = 0) -> StateModel:
    torch.manual_seed(seed)
    cfg = StateModelConfig(
        state_dim=7, action_dim=4, action_chunk=4, prompts=sorted(PROMPTS.values()), ensemble_size=3, hidden=16,
        layers=2, latent_shape=shape, latent_components=3, latent_encoder="learned", codec_width=8,
    )  # fmt: skip
    return StateModel(cfg)


def test_the_code_is_bounded_and_decoded_with_the_proprioception():
    shape = list(tiny_dynamics().noise_shape()[1:])
    model = _learned(shape)
    latents = 5 * torch.randn(6, *shape)
    state = model.observe(torch.randn(6, 4), latents)
    assert state.shape == (6, 7) and state[:, 4:].abs().max() < 1
    decoded = model.render_latents(state, None)
    assert decoded.shape == (6, *shape)
    moved = state.clone()
    moved[:, 0] += 1.0  # the proprioception alone changes the frame
    assert not torch.allclose(model.render_latents(moved, None), decoded)
    # the dynamics cannot push the code out of the encoder's range
    with torch.no_grad():
        model.dynamics[-1].bias.fill_(100.0)
    path = model.rollout_chunk(state[None].expand(3, -1, -1), torch.zeros(6, 4, 4), model.task_one_hot(
        [sorted(PROMPTS.values())[0]] * 6))  # fmt: skip
    assert path[..., 4:].abs().max() <= 1.0 and path[..., :4].abs().max() > 10


def test_its_losses_fall_when_it_trains_on_one_batch(rule_episodes):  # noqa: F811
    shape = list(tiny_dynamics().noise_shape()[1:])
    data = EpisodeDataset(rule_episodes)
    ids = list(range(len(data)))
    gen = torch.Generator().manual_seed(0)
    size = int(torch.tensor(shape).prod())
    latents = {i: torch.randn(len(data.read(i, "state")), size, generator=gen) for i in ids}
    windows = StateWindows(data, ids, 4, 2, "proprio", features={i: v.numpy() for i, v in latents.items()},
                           success_labels="episode_end")  # fmt: skip
    model = _learned(shape)
    set_statistics(model, windows)
    assert torch.allclose(model.delta_std[4:], torch.full((3,), 0.1))
    batch = windows.batch(torch.arange(16)[None])
    frames = frame_batch(model, windows, success_frames(windows, 16, gen), torch.device("cpu"))
    assert 0 < frames["success"].sum() < 16  # half the frames are the successful episodes' last ones
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = None
    for _ in range(40):
        losses = codec_losses(model, batch, frames, 2, 10.0)
        total = sum(losses.values())
        first = first if first is not None else {k: float(v.detach()) for k, v in losses.items()}
        opt.zero_grad()
        total.backward()
        opt.step()
    last = codec_losses(model, batch, frames, 2, 10.0)
    for key in ("proprio", "decode", "success"):
        assert float(last[key]) < first[key], key


def test_a_learned_code_model_trains_from_the_cli_and_imagines_in_the_env(
    rule_episodes,  # noqa: F811
    tmp_path,
    capsys,
    episodes,
    model_dirs,
):
    dyn = tiny_dynamics().save_pretrained(tmp_path / "dyn")
    args = [f"data.path={rule_episodes}", f"output_dir={tmp_path / 'om'}", "data.holdout_fraction=0.25",
            f"render.dynamics_model_dir={dyn}", "train.steps=3", *SMALL, *LEARNED]  # fmt: skip
    assert main(args) == 0
    log = capsys.readouterr().out
    assert "learned code" in log and "frames from its code PSNR" in log and "success_auc_real_states" in log
    model = StateModel.from_pretrained(tmp_path / "om" / "model")
    assert model.learned_codec and model.cfg.state_dim == 7
    env = _observation_env(episodes, model_dirs, str(tmp_path / "om" / "model"))
    obs, _ = env.reset()
    assert torch.allclose(torch.from_numpy(env._members[0]), env.observed_states(obs), atol=1e-5)
    obs, _, _, _, info = env.chunk_step(_actions(2))
    assert obs["images"].shape == (2, 2, 32, 32, 3) and info["scores"].shape == (2, 4)


def test_a_warm_start_keeps_the_kind_of_code(rule_episodes, tmp_path):  # noqa: F811
    dyn = tiny_dynamics().save_pretrained(tmp_path / "dyn")
    args = [f"data.path={rule_episodes}", f"output_dir={tmp_path / 'om'}", "data.holdout_fraction=0",
            f"render.dynamics_model_dir={dyn}", "train.steps=1", *SMALL, *LEARNED]  # fmt: skip
    assert main(args) == 0
    warm = [
        *args[:1],
        f"output_dir={tmp_path / 'pca'}",
        *args[2:-1],
        f"init_model_dir={tmp_path / 'om' / 'model'}",
    ]
    with pytest.raises(SystemExit, match=r"keeps 3 latent components \(learned\)"):
        main(warm)
