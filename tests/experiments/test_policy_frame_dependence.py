"""policy_frame_dependence.py shows the policy real, frozen, black, VAE-decoded or rendered frames, or the
real frames with imagined states."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STARTS = ROOT / "assets" / "world_models" / "state_outcome" / "starts"


def test_rendered_frames_start_as_the_vae_shows_the_start_frame_and_every_mode_plays(monkeypatch, capsys):
    """At the start state the renderer plus its start residual draws the start frame as the VAE decodes it;
    later states draw other frames; each mode asked for prints its line."""
    from policy_and_value.config import load_config
    from policy_and_value.envs.metaworld_env import MetaWorldEnv

    bench = import_module("experiments.harness.policy_frame_dependence")
    cfg = load_config("rl_metaworld_dense_wm")
    env = MetaWorldEnv(cfg.env.eval.model_copy(update={"num_envs": 3, "auto_reset": False}), 3, seed=0)
    wm = bench.imagination_of(cfg, env, samples=1)
    obs, _ = env.reset()
    env.close()
    images, states = obs["images"], obs["state"]
    wm.reset_to(images, states)
    vae = bench.seen_images("vae", obs, images, wm)
    assert (bench.seen_images("rendered", obs, images, wm).int() - vae.int()).abs().max() <= 1
    moved = {**obs, "state": states.clone()}
    moved["state"][:, :3] += 0.1  # the hand 10 cm away
    assert (bench.seen_images("rendered", moved, images, wm).int() - vae.int()).abs().float().mean() > 1

    argv = ["policy_frame_dependence.py", "--config", "rl_metaworld_dense_wm", "--starts", str(STARTS),
            "--starts-per-task", "1", "--samples", "1", "--episode-steps", "8", "--modes", "real", "vae", "rendered", "imagined_states"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    out = capsys.readouterr().out
    for mode in ("real", "vae", "rendered", "imagined_states"):
        assert f"| {mode} | " in out


def test_an_observation_model_draws_the_code_of_the_real_frame(monkeypatch):
    """With an observation model (the quickstart's) ``rendered`` is the frame drawn from its code of the real frame and
    the real proprioception: at the start, with the start residual, the VAE's decoding of the start frame; a moved
    hand draws another frame. ``--starts`` is refused for LIBERO's configs and needed for Meta-World's."""
    import pytest

    from policy_and_value.config import load_config
    from policy_and_value.envs.metaworld_env import MetaWorldEnv
    from policy_and_value.envs.metaworld_tasks import select_state

    bench = import_module("experiments.harness.policy_frame_dependence")
    cfg = load_config("quickstart")
    env = MetaWorldEnv(cfg.env.eval.model_copy(update={"num_envs": 2, "auto_reset": False}), 2, seed=0)
    wm = bench.imagination_of(cfg, env, samples=1)
    assert wm.state_model.cfg.latent_components
    obs, _ = env.reset()
    env.close()
    images, proprio = obs["images"], select_state(obs["state"], wm.cfg.state_type)
    wm.reset_to(images, proprio)
    seen = {**obs, "state": proprio}
    vae = bench.seen_images("vae", seen, images, wm)
    assert (bench.seen_images("rendered", seen, images, wm).int() - vae.int()).abs().max() <= 1
    moved = {**seen, "state": proprio.clone()}
    moved["state"][:, :3] += 0.1
    assert (bench.seen_images("rendered", moved, images, wm).int() - vae.int()).abs().float().mean() > 0.5
    monkeypatch.setattr(sys, "argv", ["policy_frame_dependence.py", "--config", "quickstart"])
    with pytest.raises(SystemExit, match="--starts=None: give it for Meta-World"):
        bench.main()
