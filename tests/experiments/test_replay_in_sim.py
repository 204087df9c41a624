"""``experiments.harness.replay_in_sim``: recorded Meta-World episodes replayed open loop from their recorded layouts
reach their recorded outcome; an outcome recorded wrongly is counted as a disagreement."""

from experiments.harness.replay_in_sim import main as replay_in_sim
from toolkits.collect_episodes import collect
from toolkits.episodes import EpisodeDataset, EpisodeWriter


def test_replayed_episodes_reach_their_recorded_outcome(tmp_path, capsys):
    writer = EpisodeWriter(str(tmp_path / "eps"), info={"layout_seed": 3})
    collect(["reach-v3"], 3, ["corner"], 32, 0.0, 0.0, 40, 5, num_envs=3, writer=writer, log=lambda *_: None,
            layout_seed=3)  # fmt: skip
    writer.close({})
    recorded = [e["success_once"] for e in EpisodeDataset(str(tmp_path / "eps")).entries]
    assert any(recorded)  # the expert reaches within 40 steps: a success to reproduce
    argv = ["--config", "rl_metaworld_dense_wm", "--episodes", str(tmp_path / "eps"), "--per-task", "3"]
    assert replay_in_sim(argv) == 0
    assert "replayed outcome = recorded outcome in 3 of 3" in capsys.readouterr().out
    flipped = EpisodeWriter(str(tmp_path / "flipped"), info={"layout_seed": 3})
    for k, ep in enumerate(EpisodeDataset(str(tmp_path / "eps"))):
        ep.meta["success_once"] = not ep.meta["success_once"] if k == 0 else ep.meta["success_once"]
        flipped.write(ep)
    flipped.close({})
    assert replay_in_sim([*argv[:2], "--episodes", str(tmp_path / "flipped")]) == 0
    assert "in 2 of 3" in capsys.readouterr().out
