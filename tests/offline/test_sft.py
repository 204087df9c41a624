"""Imitation training on a small synthetic episode dataset: samples, augmentations, training, exact resume."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from policy_and_value.offline.augment import color_jitter, random_shift
from policy_and_value.offline.config import SFTConfig
from policy_and_value.offline.dataset import ChunkDataset
from policy_and_value.offline.train_sft import check_config, train_sft
from toolkits.base.compose import compose_config
from toolkits.base.errors import ConfigError
from toolkits.episodes import Episode, EpisodeDataset, EpisodeWriter

REPO = Path(__file__).resolve().parents[2]
TASKS = {"reach-v3": "reach the goal", "push-v3": "push the puck to the goal"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    """Six short episodes of two tasks with 2 camera views; actions follow the state so they are learnable."""
    root = str(tmp_path_factory.mktemp("episodes"))
    writer = EpisodeWriter(root, info={"cameras": ["corner", "gripperPOV"], "image_size": 32})
    rng = np.random.default_rng(0)
    for i in range(6):
        task = list(TASKS)[i % 2]
        t = 10 + i
        state = rng.normal(size=(t + 1, 39)).astype(np.float32)
        actions = np.tanh(state[:-1, :4]).astype(np.float32)
        images = rng.integers(0, 255, size=(t + 1, 2, 32, 32, 3), dtype=np.uint8)
        meta = {"prompt": TASKS[task], "task": task, "task_id": i % 2, "success_once": i != 5}
        writer.write(Episode(images, state, actions, np.zeros(t, np.float32), np.zeros(t, bool), meta))
    writer.close({})
    return root


def _cfg(dataset: str, out: Path, *extra: str) -> SFTConfig:
    overrides = [f"data.path={dataset}", f"output_dir={out}", "train.max_steps=6", "train.batch_size=4",
                 "train.save_interval=3", "train.log_interval=3", "train.warmup_steps=2", "data.holdout_fraction=0.2",
                 "model.pi0.num_steps=2", *extra]  # fmt: skip
    return SFTConfig.model_validate(compose_config("offline/sft_pi0_tiny", overrides))


def test_chunk_samples_are_masked_at_episode_end(dataset):
    eps = EpisodeDataset(dataset, success=True)
    data = ChunkDataset(eps, horizon=8, state_type="proprio", cameras=["gripperPOV"])
    assert data.num_episodes == 5 and len(data) == sum(len(eps[i].actions) for i in range(5))
    first = eps[0]
    last = len(first.actions) - 1  # the last step of the first episode: one real action, 7 padded
    batch = data.batch(torch.tensor([0, last]))
    assert batch.obs["images"].shape == (2, 1, 32, 32, 3) and batch.obs["state"].shape == (2, 4)
    np.testing.assert_array_equal(batch.obs["images"][1].numpy(), first.images[last, 1:2])
    np.testing.assert_allclose(batch.actions[0].numpy(), first.actions[:8])
    assert batch.action_mask[0].tolist() == [1.0] * 8 and batch.action_mask[1].tolist() == [1.0] + [0.0] * 7
    assert batch.obs["prompt"] == ["reach the goal", "reach the goal"]


def test_augmentations_keep_shape_and_move_pixels():
    images = torch.zeros(2, 1, 16, 16, 3, dtype=torch.uint8)
    images[:, :, 8, 8] = 255
    shifted = random_shift(images, 3, torch.Generator().manual_seed(0))
    assert shifted.shape == images.shape and shifted.dtype == torch.uint8
    assert (shifted == 255).sum() == (images == 255).sum()  # a bright pixel moved, not duplicated or lost
    jittered = color_jitter(images + 100, 0.2, 0.2, torch.Generator().manual_seed(0))
    assert jittered.dtype == torch.uint8 and not torch.equal(jittered, images + 100)


def test_train_writes_a_policy_dir_and_resumes_exactly(dataset, tmp_path):
    from policy_and_value.models.pi0 import from_pretrained

    full = train_sft(_cfg(dataset, tmp_path / "full"), log=lambda *_: None)
    ckpts = tmp_path / "full" / "checkpoints"
    assert {p.name for p in ckpts.iterdir()} == {"step_3", "step_6", "latest"}
    assert (tmp_path / "full" / "tensorboard").is_dir()
    policy = from_pretrained(full)
    assert policy.normalizer.present == {"state": True, "actions": True}
    assert policy.cfg.state_dim == 39 and policy.cfg.norm_mode == "quantile"

    # stop after step 3 (as a crash would leave it), then resume to step 6: identical weights
    resumed_dir = tmp_path / "resumed"
    (resumed_dir / "checkpoints").mkdir(parents=True)
    import shutil

    shutil.copytree(ckpts / "step_3", resumed_dir / "checkpoints" / "step_3")
    (resumed_dir / "checkpoints" / "latest").write_text("step_3\n")
    lines: list[str] = []
    resumed = train_sft(_cfg(dataset, resumed_dir), log=lines.append)
    assert any("resumed" in line and "step 3" in line for line in lines)
    a, b = from_pretrained(full).state_dict(), from_pretrained(resumed).state_dict()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)


def test_finetuning_keeps_the_init_policys_statistics_when_asked(dataset, tmp_path):
    from policy_and_value.models.pi0 import load_norm_stats

    quiet = lambda *_: None  # noqa: E731
    first = train_sft(_cfg(dataset, tmp_path / "a"), log=quiet)
    more = ("data.holdout_fraction=0.5", "train.max_steps=3")  # other episodes: other statistics
    kept = train_sft(
        _cfg(dataset, tmp_path / "b", f"init_model_dir={first}", "norm_stats_from=init", *more), log=quiet
    )
    moved = train_sft(_cfg(dataset, tmp_path / "c", f"init_model_dir={first}", *more), log=quiet)
    a, b, c = (load_norm_stats(d / "norm_stats.json") for d in (first, kept, moved))
    torch.testing.assert_close(a["state"].q99, b["state"].q99, rtol=0, atol=0)
    assert not torch.allclose(a["state"].q99, c["state"].q99)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["data.path=/nonexistent"], "config error: data.path='/nonexistent': no index.json"),
        (
            ["data.tasks=[pick-place-v3]"],
            "config error: data.tasks=['pick-place-v3']: ['pick-place-v3'] not in the dataset",
        ),
        (["model.policy_type=cnn_actor_critic"], "config error: model.policy_type='cnn_actor_critic'"),
        (["init_model_dir=/tmp"], "config error: init_model_dir='/tmp': not a policy directory"),
        (["data.advantage_dropout=0.5"], "config error: data.advantage_dropout=0.5: only used with"),
        (
            ["norm_stats_from=init"],
            "config error: norm_stats_from='init': init_model_dir=None has no norm_stats",
        ),
        (  # the shipped policy reads an advantage, so fine-tuning it needs labels
            [f"init_model_dir={REPO / 'assets' / 'quickstart' / 'policy'}"],
            "config error: model.pi0.with_advantage_condition=True: needs per-step advantages",
        ),
    ],
)
def test_bad_sft_config_is_one_line(dataset, tmp_path, overrides, expected):
    with pytest.raises(ConfigError) as err:
        check_config(_cfg(dataset, tmp_path, *overrides))
    assert str(err.value).startswith(expected) and "\n" not in str(err.value)


def test_only_failed_episodes_with_success_only_is_one_line_naming_the_way_out(tmp_path):
    """e.g. a robot's recorded episodes, all failures: imitating only successes would train on nothing."""
    root = str(tmp_path / "failed")
    writer = EpisodeWriter(root, info={"cameras": ["corner", "gripperPOV"], "image_size": 32})
    rng = np.random.default_rng(0)
    meta = {"prompt": TASKS["reach-v3"], "task": "reach-v3", "task_id": 0, "success_once": False}
    images = rng.integers(0, 255, size=(9, 2, 32, 32, 3), dtype=np.uint8)
    state = rng.normal(size=(9, 39)).astype(np.float32)
    writer.write(Episode(images, state, state[:-1, :4], np.zeros(8, np.float32), np.zeros(8, bool), meta))
    writer.close({})
    with pytest.raises(
        ConfigError, match=r"data.success_only=True: .* no successful episode of the 1 chosen; set"
    ):
        check_config(_cfg(root, tmp_path / "out"))
    check_config(_cfg(root, tmp_path / "out", "data.success_only=false"))


def test_cli_rejects_unknown_key_before_loading_anything(dataset, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "policy_and_value.offline.train_sft", f"data.path={dataset}", "train.max_step=5"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert (
        "train.max_step: unknown key; did you mean 'train.max_steps'?" in proc.stderr.strip().splitlines()[-1]
    )


def _labelled(dataset: str, out: Path, advantage=None) -> str:
    """A copy of ``dataset`` labelled as reward_models.label does: per-step ``advantages`` (a ramp from
    -1 to 1, or ``advantage`` everywhere) and ``info.labels``."""
    import json
    import shutil

    import h5py

    shutil.copytree(dataset, out)
    index = json.loads((out / "index.json").read_text())
    index["info"]["labels"] = {"horizon": 2}
    (out / "index.json").write_text(json.dumps(index))
    for entry in index["episodes"]:
        n = entry["length"]
        adv = np.linspace(-1, 1, n) if advantage is None else np.full(n, advantage)
        with h5py.File(out / entry["file"], "a") as f:
            f.create_dataset("advantages", data=adv.astype(np.float32))
    return str(out)


COND = ["model.pi0.with_advantage_condition=true", "model.pi0.advantage_bin_edges=[0.0]"]


def test_advantage_conditioned_imitation_needs_labels(dataset, tmp_path):
    with pytest.raises(ConfigError, match="needs per-step advantages .* python -m reward_models.label"):
        check_config(_cfg(dataset, tmp_path / "a", *COND))
    check_config(_cfg(_labelled(dataset, tmp_path / "labelled"), tmp_path / "b", *COND))


def test_advantage_conditioned_imitation_trains_on_the_label_bins(dataset, tmp_path):
    """Datasets identical but for their labels (all below vs all above the bin edge) train different
    weights from the same seed; with ``advantage_dropout=1`` every prompt drops the advantage and the
    weights are identical. The saved policy asks for the best bin at inference and evaluates its chunks."""
    from policy_and_value.models.pi0 import from_pretrained

    steps = ["train.max_steps=2", "train.save_interval=2", "train.log_interval=2"]
    weights = {}
    for dropout in (0.0, 1.0):
        for adv in (-1.0, 1.0):
            data = _labelled(dataset, tmp_path / f"data_{dropout}_{adv}", adv)
            cfg = _cfg(
                data, tmp_path / f"out_{dropout}_{adv}", *COND, *steps, f"data.advantage_dropout={dropout}"
            )
            weights[dropout, adv] = from_pretrained(train_sft(cfg, log=lambda *_: None)).state_dict()
    differs = [k for k in weights[0.0, -1.0] if not torch.equal(weights[0.0, -1.0][k], weights[0.0, 1.0][k])]
    assert differs, "the advantage labels did not reach the loss"
    for key, value in weights[1.0, -1.0].items():
        torch.testing.assert_close(value, weights[1.0, 1.0][key], rtol=0, atol=0, msg=key)

    policy = from_pretrained(tmp_path / "out_0.0_1.0" / "policy")
    assert policy.cfg.with_advantage_condition and policy.best_advantage_bin == 1
    obs = ChunkDataset(EpisodeDataset(dataset), 4).batch(torch.arange(3)).obs
    out = policy.predict(obs, mode="eval")
    state = policy.normalizer.normalize("state", obs["state"])
    best, _ = policy.tokenizer(policy.prompts(obs, state, torch.full((3,), policy.best_advantage_bin)))
    plain, _ = policy.tokenizer(policy.prompts(obs, state, None))
    assert torch.equal(out.replay["lang_tokens"], best) and not torch.equal(best, plain)
    assert out.actions.shape == (3, policy.num_action_chunks, 4) and torch.isfinite(out.actions).all()
    logprob, _, _ = policy.evaluate({"obs": obs, **out.replay})
    assert torch.isfinite(logprob).all()
