"""Reward models on tiny models and synthetic episodes: contract, labels, TD target, training, labelling."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from reward_models import FrameScorer, RewardModelConfig, rewards_from_progress
from reward_models.config import RewardModelJob
from reward_models.label import label_dataset
from reward_models.targets import advantages_from_values, progress_labels, success_labels, td_targets
from reward_models.train import check_job, train_reward_model
from toolkits.base.compose import compose_config
from toolkits.base.errors import ConfigError
from toolkits.episodes import Episode, EpisodeWriter

REPO = Path(__file__).resolve().parents[2]
PROMPTS = ["reach the goal", "push the puck to the goal"]


def _frame(progress: float, rng: np.random.Generator) -> np.ndarray:
    """A 32x32 frame whose bright square sits further right the more progress there is."""
    img = rng.integers(0, 40, size=(32, 32, 3), dtype=np.uint8)
    x = int(round(progress * 24))
    img[12:20, x : x + 8] = 230
    return img


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    """12 episodes, 2 tasks: successful ones move the square across; failed ones leave it near the start."""
    root = str(tmp_path_factory.mktemp("rm_episodes"))
    writer = EpisodeWriter(root, info={"cameras": ["corner"], "image_size": 32})
    rng = np.random.default_rng(0)
    for i in range(12):
        ok = i % 3 != 0
        t = 12 + i % 4
        path = np.linspace(0, 1, t + 1) if ok else np.abs(rng.normal(0, 0.08, t + 1))
        images = np.stack([_frame(p, rng) for p in path])[:, None]
        success = np.zeros(t, bool)
        success[-1] = ok
        meta = {"prompt": PROMPTS[i % 2], "task": ["reach-v3", "push-v3"][i % 2], "success_once": ok}
        writer.write(Episode(images, np.zeros((t + 1, 4), np.float32), np.zeros((t, 4), np.float32),
                             np.zeros(t, np.float32), success, meta))  # fmt: skip
    writer.close({})
    return root


def _job(dataset: str, out: Path, *extra: str) -> RewardModelJob:
    overrides = [f"data.path={dataset}", f"output_dir={out}", "model.image_size=32", "model.channels=[8,16]",
                 "model.hidden=32", "train.max_steps=150", "train.batch_size=32", "train.log_interval=50",
                 "train.save_interval=100", "train.random_shift=2", "train.target_ema=0.9", *extra]  # fmt: skip
    return RewardModelJob.model_validate(compose_config("reward/progress_tiny", overrides))


def test_score_contract_and_errors():
    model = FrameScorer(
        RewardModelConfig(num_views=2, image_size=32, channels=[8], hidden=16, prompts=PROMPTS)
    )
    images = torch.randint(0, 256, (3, 5, 2, 48, 48, 3), dtype=torch.uint8)  # resized to 32 inside
    scores = model.score(images, [PROMPTS[0], PROMPTS[1], PROMPTS[0]])
    assert scores.shape == (3, 5) and bool(((scores >= 0) & (scores <= 1)).all())
    with pytest.raises(ValueError, match="unknown prompts \\['open the door'\\]"):
        model.score(images, ["open the door"] * 3)
    with pytest.raises(ValueError, match="expects 2 views, got 1"):
        model.score(images[:, :, :1], [PROMPTS[0]] * 3)


def test_save_load_round_trip_and_strict_keys(tmp_path):
    from safetensors.torch import load_file, save_file

    model = FrameScorer(RewardModelConfig(image_size=32, channels=[8], hidden=16, prompts=PROMPTS))
    images = torch.randint(0, 256, (2, 3, 1, 32, 32, 3), dtype=torch.uint8)
    model.save_pretrained(tmp_path / "m")
    loaded = FrameScorer.from_pretrained(tmp_path / "m")
    torch.testing.assert_close(loaded.score(images, PROMPTS), model.eval().score(images, PROMPTS))
    state = load_file(str(tmp_path / "m" / "model.safetensors"))
    state["extra.weight"] = torch.zeros(1)
    save_file(state, str(tmp_path / "m" / "model.safetensors"))
    with pytest.raises(KeyError, match="unexpected keys \\['extra.weight'\\]"):
        FrameScorer.from_pretrained(tmp_path / "m")


def test_labels_and_td_target():
    np.testing.assert_allclose(progress_labels(5), [0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(success_labels(np.array([False, True, False])), [0, 0, 1, 1])
    nxt = torch.tensor([0.5, 0.8, 0.9])
    torch.testing.assert_close(
        td_targets(nxt, torch.tensor([False, False, True]), 0.9), torch.tensor([0.45, 0.72, 0.0])
    )
    values = np.array([0.0, 0.1, 0.3, 0.6, 1.0], np.float32)
    # t=0, H=2: mean(0.1, 0.3) - 0 = 0.2; t=3: next frames clip at the end: mean(1.0, 1.0) - 0.6 = 0.4
    np.testing.assert_allclose(advantages_from_values(values, 2, scale=2.0), [0.4, 0.7, 1.0, 0.8], rtol=1e-6)


def test_reward_modes():
    p = torch.tensor([[0.2, 0.3, 0.5, 0.6]])  # start frame, then 3 predicted frames
    torch.testing.assert_close(rewards_from_progress(p, "per_frame"), torch.tensor([[0.3, 0.5, 0.6]]))
    torch.testing.assert_close(rewards_from_progress(p, "chunk_reward", 2.0), torch.tensor([[0.0, 0.0, 1.2]]))
    torch.testing.assert_close(rewards_from_progress(p, "relative"), torch.tensor([[0.1, 0.2, 0.1]]))
    torch.testing.assert_close(rewards_from_progress(p, "v2"), torch.tensor([[0.0, 0.0, 0.4]]))
    torch.testing.assert_close(rewards_from_progress(p, "v1"), torch.tensor([[0.0, 0.0, 0.4 / 3]]))
    with pytest.raises(ValueError, match="reward mode must be one of"):
        rewards_from_progress(p, "v3")


def test_progress_model_trains_separates_and_labels(dataset, tmp_path):
    model_dir = train_reward_model(_job(dataset, tmp_path / "rm"), log=lambda *_: None)
    assert (tmp_path / "rm" / "checkpoints" / "step_100" / "model.safetensors").exists()
    assert (tmp_path / "rm" / "tensorboard").is_dir()
    model = FrameScorer.from_pretrained(model_dir)
    rng = np.random.default_rng(1)
    start = torch.from_numpy(np.stack([_frame(0.0, rng) for _ in range(4)]))[:, None, None]
    end = torch.from_numpy(np.stack([_frame(1.0, rng) for _ in range(4)]))[:, None, None]
    prompts = [PROMPTS[0], PROMPTS[1]] * 2
    assert float(model.score(end, prompts).mean()) > float(model.score(start, prompts).mean()) + 0.4

    out = tmp_path / "labelled"
    stats = label_dataset(str(model_dir), dataset, str(out), horizon=3, advantage_scale=2.0)
    assert stats["episodes"] == 12
    with h5py.File(Path(dataset) / "episodes" / "episode_000001.h5") as f:
        assert "values" not in f  # the source is untouched
        images = torch.from_numpy(f["images"][()])
    with h5py.File(out / "episodes" / "episode_000001.h5") as f:
        values, adv = f["values"][()], f["advantages"][()]
    np.testing.assert_allclose(
        values, model.score(images[None], [PROMPTS[1]])[0].numpy(), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(adv, advantages_from_values(values, 3, 2.0), rtol=1e-6)
    assert json.loads((out / "index.json").read_text())["info"]["labels"]["horizon"] == 3


def test_success_classifier_trains(dataset, tmp_path):
    model_dir = train_reward_model(_job(dataset, tmp_path / "sc", "model.kind=success"), log=lambda *_: None)
    model = FrameScorer.from_pretrained(model_dir)
    assert model.cfg.kind == "success"
    rng = np.random.default_rng(2)
    end = torch.from_numpy(np.stack([_frame(1.0, rng) for _ in range(4)]))[:, None, None]
    start = torch.from_numpy(np.stack([_frame(0.0, rng) for _ in range(4)]))[:, None, None]
    prompts = [PROMPTS[0], PROMPTS[1]] * 2
    assert float(model.score(end, prompts).mean()) > float(model.score(start, prompts).mean())


def test_bad_job_is_one_line(dataset, tmp_path):
    with pytest.raises(
        ConfigError, match="^config error: data.cameras=\\['wrist'\\]: \\['wrist'\\] not recorded"
    ):
        check_job(_job(dataset, tmp_path, "data.cameras=[wrist]"))
    proc = subprocess.run(
        [sys.executable, "-m", "reward_models.train", "data.path=/nonexistent"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "config error: data.path='/nonexistent': no index.json here (write one with python -m toolkits.collect_episodes)"
    )


def test_split_keeps_successes_and_failures_of_every_task_on_both_sides():
    from toolkits.episodes import split_episodes as split

    entries = [{"task": t, "success_once": ok} for t in ("a", "b") for ok in (True,) * 8 + (False,) * 3]
    train, held = split(entries, 0.2, seed=0)
    assert sorted(train + held) == list(range(len(entries))) and not set(train) & set(held)
    for side in (train, held):
        assert {(entries[i]["task"], entries[i]["success_once"]) for i in side} == {
            ("a", True),
            ("a", False),
            ("b", True),
            ("b", False),
        }
