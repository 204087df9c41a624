"""policy_frame_dependence.py shows the policy real, frozen, black, VAE-decoded or rendered frames."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from tests.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
STARTS = ROOT / "assets" / "world_models" / "state_outcome" / "starts"


def test_rendered_frames_start_as_the_vae_shows_the_start_frame_and_every_mode_plays(monkeypatch, capsys):
    """At the start state the renderer plus its start residual draws the start frame as the VAE decodes it;
    later states draw other frames; each mode asked for prints its line."""
    from toolkits.episodes import EpisodeDataset

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = load_benchmark("policy_frame_dependence")
    data = EpisodeDataset(str(STARTS))
    eps = [data[i] for i in range(2)]
    images = torch.from_numpy(np.stack([e.images[0] for e in eps]))
    states = torch.from_numpy(np.stack([e.state[0] for e in eps])).float()
    frames = bench.Frames(
        str(ROOT / "assets" / "world_models" / "tiny_3tasks"),
        str(ROOT / "assets" / "world_models" / "state_outcome" / "model"),
        [e.meta["prompt"] for e in eps],
    )
    frames.start(images, states)
    assert (frames.render(states).int() - frames.vae(images).int()).abs().max() <= 1
    moved = states.clone()
    moved[:, :3] += 0.1  # the hand 10 cm away
    assert (frames.render(moved).int() - frames.vae(images).int()).abs().float().mean() > 1

    argv = ["policy_frame_dependence.py", "--config", "rl_metaworld_dense_wm", "--starts", str(STARTS),
            "--starts-per-task", "1", "--samples", "1", "--episode-steps", "8", "--modes", "real", "vae", "rendered"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    out = capsys.readouterr().out
    for mode in ("real", "vae", "rendered"):
        assert f"| {mode} | " in out
