"""The offline anchor (``algorithm.offline_data_coef``): flow matching on recorded episodes in every actor
minibatch keeps self-imitation from drifting off the demonstrations, and its bins follow the labels."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from policy_and_value.offline.anchor import OfflineAnchor
from policy_and_value.offline.train_sft import heldout_loss
from policy_and_value.workers.actor_worker import ActorWorker
from tests.assets import QUICKSTART_TASKS, REPO, shipped_policy_actor
from toolkits.episodes import Episode, EpisodeWriter

RESET_EPISODES = str(REPO / "assets" / "quickstart" / "reset_episodes")  # expert episodes, 3 tasks
TASKS = list(QUICKSTART_TASKS)
CAMERAS = ["corner", "gripperPOV"]


def make_actor(coef: float) -> ActorWorker:
    """An IL actor on the shipped imitation policy (rl_release_video), with the anchor at weight ``coef``."""
    return shipped_policy_actor(
        "algorithm.train_mode=IL", "algorithm.advantage_dropout=0", f"algorithm.offline_data_coef={coef}",
        f"algorithm.offline_data_path={RESET_EPISODES}", "actor.optim.lr=3e-4",
    )  # fmt: skip


@pytest.fixture(scope="module")
def demos() -> OfflineAnchor:
    return OfflineAnchor(RESET_EPISODES, TASKS, horizon=4, state_type="full", cameras=CAMERAS, seed=0)


def self_imitation_samples(actor: ActorWorker, demos: OfflineAnchor, n: int = 8) -> dict:
    """The policy's own sampled chunks on recorded observations, as the actor's flattened samples."""
    index = torch.randperm(len(demos.data), generator=torch.Generator().manual_seed(1))[:n]
    obs = demos.data.batch(index).obs
    torch.manual_seed(0)
    out = actor.policy.predict(obs)
    obs["prompt"] = np.array(obs["prompt"], dtype=object)  # as flatten_time leaves it
    return {
        "obs": obs, "replay": out.replay, "actions": out.actions, "logprob": out.logprob,
        "advantages": torch.ones(n), "returns": torch.linspace(0, 1, n), "values": torch.zeros(n), "loss_mask": torch.ones(n),
    }  # fmt: skip


def test_anchor_keeps_self_imitation_close_to_the_demonstrations(demos):
    """Same self-imitation updates with and without the anchor: only the anchored policy logs the
    offline loss and keeps it near where the imitation checkpoint had it."""
    losses, logged = {}, {}
    for coef in (0.0, 1.0):
        actor = make_actor(coef)
        assert (actor.offline is not None) == (coef > 0)
        samples = self_imitation_samples(actor, demos)
        start = heldout_loss(actor.policy, demos.data, max_samples=64)
        torch.manual_seed(0)
        for _ in range(6):
            stats = actor._minibatch_step(samples, torch.arange(8), micro=4)
        losses[coef] = heldout_loss(actor.policy, demos.data, max_samples=64)
        logged[coef] = stats
    assert "train/actor/offline_fm_loss" not in logged[0.0]
    assert 0 < logged[1.0]["train/actor/offline_fm_loss"] < float("inf")
    assert losses[1.0] - start < 0.5 * (losses[0.0] - start), (start, losses)


def test_critic_warmup_zeroes_the_anchor_too(demos):
    """During the critic warm-up the offline term moves no policy weight either (only the value head)."""
    actor = make_actor(1.0)
    before = {k: v.clone() for k, v in actor.policy.state_dict().items()}
    stats = actor._minibatch_step(self_imitation_samples(actor, demos), torch.arange(8), 4, critic_only=True)
    assert stats["train/actor/offline_fm_loss"] > 0
    for name, tensor in actor.policy.state_dict().items():
        if not name.startswith("value_head"):
            assert torch.equal(tensor, before[name]), name


def test_actor_checkpoint_resumes_the_offline_draws_exactly(demos, tmp_path):
    """The anchor's generator is part of the actor checkpoint; pi0 parameters no loss reaches (saved
    without optimiser state) do not stop the load."""
    actor = make_actor(1.0)
    samples = self_imitation_samples(actor, demos)
    actor._minibatch_step(samples, torch.arange(8), micro=4)
    extra = actor.save_checkpoint(str(tmp_path / "actor"))
    expected = actor._minibatch_step(samples, torch.arange(8), micro=4)
    resumed = make_actor(1.0)
    resumed.load_checkpoint(str(tmp_path / "actor"), extra)
    assert resumed._minibatch_step(samples, torch.arange(8), micro=4) == expected


def write_episodes(root: Path, advantages: list[float] | None = None) -> str:
    """A successful and a failed reach-v3 episode of 3 steps; with ``advantages`` (one value per
    episode) labelled the way reward_models.label does it."""
    labels = {"labels": {"horizon": 2}} if advantages is not None else {}
    writer = EpisodeWriter(str(root), info={"cameras": CAMERAS, **labels})
    rng = np.random.default_rng(0)
    for i, ok in enumerate((True, False)):
        meta = {"prompt": "reach the goal position", "task": "reach-v3", "success_once": ok}
        rel = writer.write(Episode(rng.integers(0, 255, (4, 2, 8, 8, 3), dtype=np.uint8),
                                   rng.normal(size=(4, 39)).astype(np.float32), np.zeros((3, 4), np.float32),
                                   np.zeros(3, np.float32), np.full(3, ok), meta))  # fmt: skip
        if advantages is not None:
            with h5py.File(root / rel, "a") as f:
                f.create_dataset("advantages", data=np.full(3, advantages[i], np.float32))
    writer.close()
    return str(root)


@pytest.mark.parametrize("advantages", [None, [-1.0, 1.0]], ids=["unlabelled", "labelled"])
def test_prompt_bins_follow_labels_else_success(tmp_path, advantages):
    """Unlabelled data: the best bin for successful episodes, 0 for failed ones; labelled: the bin of
    each step's advantage (here the failed episode has the better one)."""
    from policy_and_value.models.pi0 import from_pretrained

    policy = from_pretrained(REPO / "assets" / "quickstart" / "policy")
    anchor = OfflineAnchor(write_episodes(tmp_path, advantages), ["reach-v3"], 2, "full", CAMERAS, seed=0)
    batch = anchor.sample(32, policy)
    index = torch.randint(6, (32,), generator=torch.Generator().manual_seed(0))  # the anchor's draw
    if advantages is None:
        expected = [policy.best_advantage_bin if ok else 0 for ok in anchor.data.success[index]]
    else:
        expected = policy.advantage_to_bin(anchor.data.advantages[index]).tolist()
        assert set(expected) == {0, policy.best_advantage_bin}
    assert batch["advantage_bin"].tolist() == expected
    assert batch["actions"].shape == (32, 2, 4) and set(batch["obs"]) == {"images", "state", "prompt"}
