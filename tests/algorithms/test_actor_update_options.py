"""Options of the actor's update: ``algorithm.target_kl`` stops a PPO training step once the policy has
moved further than this from the rollout policy (approx. KL); ``ablation.shuffle_advantages`` (an
ablation) hands the same advantages to random chunks and ``ablation.reverse_advantages`` (another)
negates them; ``algorithm.imitation_min_advantage`` (IL) imitates only the chunks at or above it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from policy_and_value.algorithms.credit import assign_credit
from policy_and_value.algorithms.imitation import imitation_batch
from policy_and_value.offline.dataset import ChunkDataset
from policy_and_value.workers.actor_worker import ActorWorker
from tests.assets import REPO, shipped_policy_actor
from toolkits.episodes import EpisodeDataset

ENVS = 16


def make_actor(*overrides: str) -> ActorWorker:
    """A PPO actor on the shipped imitation policy (rl_release_video), 16 samples per step in minibatches of 4."""
    return shipped_policy_actor(
        "cluster=shared", "algorithm.train_mode=RL", "algorithm.critic_warmup_steps=0", "algorithm.update_epoch=4",
        f"algorithm.num_group_envs={ENVS}", "algorithm.n_chunk_steps=1", "algorithm.rollout_epoch=1",
        "actor.global_batch_size=4", "actor.micro_batch_size=4", "actor.optim.lr=1e-2", *overrides,
    )  # fmt: skip


@pytest.fixture(scope="module")
def observations() -> dict:
    """16 recorded observations of the three tasks (the shipped reset episodes)."""
    episodes = EpisodeDataset(str(REPO / "assets" / "quickstart" / "reset_episodes"))
    data = ChunkDataset(episodes, horizon=4, state_type="full", cameras=["corner", "gripperPOV"])
    return data.batch(torch.randperm(len(data), generator=torch.Generator().manual_seed(0))[:ENVS]).obs


def one_step_shard(actor: ActorWorker, obs: dict) -> dict:
    """A time-major shard of one chunk per env, sampled by the actor's own policy, with random rewards."""
    torch.manual_seed(0)
    out = actor.policy.predict(obs)
    prompts = np.empty((1, ENVS), dtype=object)
    prompts[0, :] = obs["prompt"]
    return {
        "obs": {"images": obs["images"][None], "state": obs["state"][None], "prompt": prompts},
        "actions": out.actions[None], "logprob": out.logprob[None], "replay": {k: v[None] for k, v in out.replay.items()},
        "rewards": torch.randn(1, ENVS, generator=torch.Generator().manual_seed(1)), "dones": torch.ones(1, ENVS),
        "loss_mask": torch.ones(1, ENVS), "values": torch.cat([out.value[None], torch.zeros(1, ENVS)]),
    }  # fmt: skip


@pytest.mark.parametrize("target_kl", [None, 1e-3])
def test_target_kl_stops_the_step_early(observations, target_kl):
    """Without a target all 4 epochs x 4 minibatches step; with a tiny one the step stops after the first
    minibatch whose KL exceeds it (the first minibatch's KL is 0: the policy has not moved yet)."""
    actor = make_actor(f"algorithm.target_kl={target_kl if target_kl is not None else 'null'}")
    metrics = actor.train(one_step_shard(actor, observations))
    steps = actor.scheduler.last_epoch
    if target_kl is None:
        assert steps == 16 and metrics["train/actor/kl_early_stop"] == 0.0
    else:
        assert 2 <= steps < 16 and metrics["train/actor/kl_early_stop"] == 1.0
        assert metrics["train/actor/approx_kl"] > 0


def ranked_shard(observations) -> dict:
    """One shard whose rewards rise from -1 to 1 over the envs (distinct advantages)."""
    shard = one_step_shard(make_actor(), observations)
    shard["rewards"] = torch.linspace(-1, 1, ENVS)[None]
    return shard


def advantages_of(actor: ActorWorker, shard: dict) -> torch.Tensor:
    """The actor's (normalised, ablated) advantages of ``shard``, computed on a copy."""
    traj = dict(shard, values=shard["values"].clone())
    assign_credit(
        traj, actor.cfg.algorithm, actor.shuffle_gen, None, actor.env_group_names, actor.cfg.ablation
    )
    return traj["advantages"]


def plain_and_ablated_advantages(observations, ablation: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The advantages of one ranked shard without and with the ablation override."""
    shard = ranked_shard(observations)
    return advantages_of(make_actor(), shard), advantages_of(make_actor(ablation), shard)


def test_shuffled_advantages_keep_their_values_not_their_chunks(observations):
    """The ablation permutes the normalised advantages among the valid chunks: same values, other order."""
    plain, shuffled = plain_and_ablated_advantages(observations, "ablation.shuffle_advantages=true")
    assert torch.equal(plain.sort().values, shuffled.sort().values)
    assert not torch.equal(plain, shuffled)


def test_reversed_advantages_are_the_negated_ones(observations):
    """The reverse ablation hands every chunk minus its normalised advantage."""
    plain, reversed_ = plain_and_ablated_advantages(observations, "ablation.reverse_advantages=true")
    assert plain.abs().sum() > 0
    assert torch.equal(reversed_, -plain)


def test_imitation_min_advantage_leaves_the_worse_chunks_out(observations):
    """IL with a threshold: the imitation mask is 1 exactly on the chunks whose advantage reaches it (and
    the loss then differs from imitating all); without one every valid chunk is imitated."""
    shard = ranked_shard(observations)
    masks, losses = [], []
    for threshold in ("null", "0.5"):
        actor = make_actor("algorithm.train_mode=IL", f"algorithm.imitation_min_advantage={threshold}")
        advantages = advantages_of(actor, shard)[0]
        mb = {"obs": observations, "actions": shard["actions"][0], "advantages": advantages,
              "loss_mask": shard["loss_mask"][0]}  # fmt: skip
        batch = imitation_batch(mb, actor.policy, actor.cfg.algorithm, actor.shuffle_gen)
        masks.append(batch["action_mask"])
        torch.manual_seed(0)  # the same noise and flow times for both losses
        losses.append(actor.policy.flow_matching_loss(batch))
    adv = advantages.reshape(ENVS, -1).mean(-1)  # the threshold does not change the advantages
    assert torch.equal(masks[0], torch.ones_like(masks[0]))
    kept = masks[1][:, 0].bool()
    assert torch.equal(kept, adv >= 0.5) and 0 < int(kept.sum()) < ENVS
    assert not torch.allclose(losses[0], losses[1])
    metrics = actor.train(shard)  # the logged share of imitated chunks is the kept share
    assert 0.0 < metrics["train/actor/imitated_fraction"] < 1.0


def grouped_outcome_shard(observations) -> dict:
    """One GRPO shard of 16 envs in 4 groups of 4: all fail, all succeed, and two mixed groups."""
    shard = one_step_shard(make_actor(), observations)
    shard["rewards"] = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0]], dtype=torch.float32)
    return shard


def grpo_actor(*overrides: str) -> ActorWorker:
    return make_actor(
        "algorithm.adv_type=grpo", "algorithm.group_size=4", "env.train.group_size=4",
        "env.train.use_fixed_reset_state_ids=true", "env.train.auto_reset=false", *overrides,
    )  # fmt: skip


@pytest.mark.parametrize("drop", [False, True])
def test_uniform_groups_are_dropped_and_counted(observations, drop):
    """Dynamic sampling: groups whose episodes all ended alike leave the loss mask (the two mixed groups
    stay, with their GRPO advantages); the share of mixed groups is logged either way."""
    shard = grouped_outcome_shard(observations)
    actor = grpo_actor(f"algorithm.drop_uniform_groups={str(drop).lower()}")
    traj = dict(shard, values=shard["values"].clone())
    metrics = assign_credit(traj, actor.cfg.algorithm, actor.shuffle_gen)
    assert metrics["rollout/mixed_group_fraction"] == 0.5
    mixed = torch.tensor([False] * 8 + [True] * 8)
    assert torch.equal(traj["loss_mask"][0].bool(), mixed if drop else torch.ones(ENVS, dtype=torch.bool))
    adv = traj["advantages"][0]
    assert torch.all(adv[:8] == 0)  # uniform groups: nothing to compare, dropped or not
    assert torch.all(adv[8:][shard["rewards"][0, 8:] == 1] > 0) and torch.all(
        adv[8:][shard["rewards"][0, 8:] == 0] < 0
    )
    if drop:  # filtered imitation then imitates exactly the successes of the mixed groups
        il = grpo_actor(
            "algorithm.drop_uniform_groups=true",
            "algorithm.train_mode=IL",
            "algorithm.imitation_min_advantage=0.0",
        )
        traj = dict(shard, values=shard["values"].clone())
        assign_credit(traj, il.cfg.algorithm, il.shuffle_gen)
        mb = {"obs": observations, "actions": shard["actions"][0], "advantages": traj["advantages"][0],
              "loss_mask": traj["loss_mask"][0]}  # fmt: skip
        kept = imitation_batch(mb, il.policy, il.cfg.algorithm, il.shuffle_gen)["action_mask"][:, 0].bool()
        assert torch.equal(kept, mixed & (shard["rewards"][0] == 1))


def test_returns_to_go_reach_the_chunks_through_the_actor(observations):
    """algorithm.grpo_return=to_go: the actor's advantages are the group-normalised returns to go (here
    one chunk per env, so they equal the episode's GRPO advantages) and its returns the rewards to go."""
    shard = grouped_outcome_shard(observations)
    episode, to_go = grpo_actor(), grpo_actor("algorithm.grpo_return=to_go")
    a = dict(shard, values=shard["values"].clone())
    b = dict(shard, values=shard["values"].clone())
    assign_credit(a, episode.cfg.algorithm, episode.shuffle_gen)
    assign_credit(b, to_go.cfg.algorithm, to_go.shuffle_gen)
    assert torch.allclose(a["advantages"], b["advantages"], atol=1e-5)
    assert torch.equal(b["returns"], shard["rewards"])


def test_mixed_groups():
    from policy_and_value.algorithms import mixed_groups

    grouped = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.2, 0.2, 0.2 + 1e-3]])
    assert mixed_groups(grouped).tolist() == [False, False, True, True]


def test_a_step_whose_groups_all_ended_alike_updates_nothing(observations):
    """Every group uniform: nothing is imitated, the weights stay, and the share of mixed groups is 0."""
    shard = grouped_outcome_shard(observations)
    shard["rewards"] = torch.tensor([[0.0] * 8 + [1.0] * 8])
    actor = grpo_actor(
        "algorithm.drop_uniform_groups=true",
        "algorithm.train_mode=IL",
        "algorithm.imitation_min_advantage=0.0",
        "algorithm.offline_data_coef=0",  # no anchor: nothing else moves the weights
    )
    before = {k: v.clone() for k, v in actor.policy.state_dict().items()}
    metrics = actor.train(shard)
    assert metrics["rollout/mixed_group_fraction"] == 0.0 and metrics["train/actor/imitated_fraction"] == 0.0
    changed = [k for k, v in actor.policy.state_dict().items() if not torch.equal(before[k], v)]
    assert not changed, changed


def test_imitation_replay_keeps_the_selected_chunks_and_imitates_them(observations):
    """``imitation_replay_size``: each step's selected chunks (the successes of mixed groups) join the
    replay, the oldest overwritten once it is full; every micro batch adds a flow-matching loss on
    replayed chunks; the buffer and its draws come back from a saved state."""
    from policy_and_value.offline.replay import ImitationReplay

    shard = grouped_outcome_shard(observations)
    actor = grpo_actor(
        "algorithm.drop_uniform_groups=true", "algorithm.train_mode=IL", "algorithm.imitation_min_advantage=0.0",
        "algorithm.imitation_replay_size=5", "algorithm.offline_data_coef=0",
    )  # fmt: skip
    metrics = actor.train(dict(shard))  # train trims the shard's values in place
    successes = shard["actions"][0][[8, 13, 14]]  # the successes of the two mixed groups
    assert metrics["train/actor/replay_size"] == 3.0 and metrics["train/actor/replay_fm_loss"] > 0
    assert torch.equal(actor.replay.actions[:3], successes)
    actor.train(dict(shard))
    assert len(actor.replay) == 5 and actor.replay.added == 6  # the first chunk was overwritten
    assert torch.equal(actor.replay.actions[0], successes[2]) and torch.equal(
        actor.replay.actions[1:3], successes[1:]
    )
    restored = ImitationReplay(5, seed=0)
    restored.load_state_dict(actor.replay.state_dict())
    assert torch.equal(restored.sample(5)["actions"], actor.replay.sample(5)["actions"])
    assert restored.sample(3)["obs"]["prompt"] == actor.replay.sample(3)["obs"]["prompt"]


def test_critic_epochs_fit_only_the_state_critic(observations):
    """``algorithm.critic_epochs``: after a warm-up step (no policy loss) the critic alone has been fitted
    to the step's returns, far better than before; no other weight moved. The state critic reads the
    task and ``obs["time_left"]`` (a rollout without it is refused)."""
    actor = make_actor(
        "model.pi0.value_after_vlm=false", "model.pi0.value_from_state=true", "algorithm.critic_warmup_steps=1",
        "algorithm.critic_epochs=40", "actor.optim.value_lr=1e-2", "actor.optim.clip_critic_apart=true",
        "algorithm.value_clip=null",
    )  # fmt: skip
    obs = {**observations, "task_id": torch.arange(ENVS) % 3, "time_left": torch.linspace(0, 1, ENVS)}
    shard = one_step_shard(actor, obs)
    shard["obs"].update(task_id=obs["task_id"][None], time_left=obs["time_left"][None])
    before = {k: v.clone() for k, v in actor.policy.state_dict().items()}
    metrics = actor.train(shard)
    after = actor.policy.state_dict()
    moved = {k for k in before if not torch.equal(before[k], after[k])}
    assert moved and all(k.startswith("value_head") for k in moved)
    assert metrics["train/critic/fit_explained_variance"] > 0.9
    assert metrics["train/critic/fit_value_loss"] < metrics["train/critic/value_loss"] / 10
    with pytest.raises(ValueError, match="time_left"):
        actor.policy.predict(observations)


GROUPS = "env.train.groups=[{name:a,num_envs:8},{name:b,num_envs:8,loss_weight:%s}]"
HALVES = torch.tensor([[0] * 8 + [1] * 8])  # each env's env group, as the rollout records it


def test_chunks_of_a_group_weighted_zero_train_nothing(observations):
    """An env group's ``loss_weight`` reaches the losses: with weight 0 on half the envs, their rewards do
    not change the update (per-env advantages, one chunk an episode, no normalisation across envs), while
    without weights they do; the other half's chunks still train."""
    unweighted = dict(ranked_shard(observations), env_group=HALVES)
    changed = dict(unweighted, rewards=unweighted["rewards"].clone())
    changed["rewards"][0, 8:] = -changed["rewards"][0, 8:]

    def trained(shard: dict, weight: float) -> dict[str, torch.Tensor]:
        actor = make_actor(
            "algorithm.normalize_advantages=false", "algorithm.offline_data_coef=0", GROUPS % weight
        )
        before = {k: v.clone() for k, v in actor.policy.state_dict().items()}
        actor.train(dict(shard, values=shard["values"].clone()))
        after = actor.policy.state_dict()
        assert any(not torch.equal(before[k], after[k]) for k in before)
        return after

    def same(a: dict, b: dict) -> bool:
        return all(torch.equal(a[k], b[k]) for k in a)

    assert not same(trained(unweighted, 1), trained(changed, 1))
    assert same(trained(unweighted, 0), trained(changed, 0))


@pytest.mark.parametrize("by", ["batch", "env_group"])
def test_advantages_normalised_by_env_group(observations, by):
    """``normalize_advantages_by: env_group`` whitens each env group's advantages on its own: the group
    whose rewards are 10x larger no longer sets the other's scale; ``batch`` whitens them together."""
    actor = make_actor(GROUPS % 1, f"algorithm.normalize_advantages_by={by}")
    shard = dict(ranked_shard(observations), env_group=HALVES)
    shard["rewards"] = shard["rewards"] * torch.tensor([[1.0] * 8 + [10.0] * 8])
    traj = dict(shard, values=shard["values"].clone())
    metrics = assign_credit(
        traj, actor.cfg.algorithm, actor.shuffle_gen, None, actor.env_group_names, actor.cfg.ablation
    )
    adv = traj["advantages"][0]
    small, large = adv[:8], adv[8:]
    if by == "env_group":
        for part in (small, large):
            assert abs(float(part.mean())) < 1e-5 and abs(float(part.std(unbiased=False)) - 1) < 1e-4
    else:
        assert abs(float(adv.mean())) < 1e-5 and float(small.std()) < float(large.std()) / 3
    # each group's raw advantage spread and centre are logged, the same either way
    assert metrics["rollout/b/advantages_std"] > 5 * metrics["rollout/a/advantages_std"]
    assert metrics["rollout/b/advantages_mean"] == pytest.approx(
        float(traj["rewards"][0, 8:].mean()) - float(shard["values"][0, 8:].mean()), abs=1e-5
    )


def test_shuffling_one_env_groups_advantages(observations):
    """``shuffle_advantages_of: [b]`` hands group b's advantages to random chunks of b and leaves a's
    where they were: the ablation of one group's signal (e.g. the imagined envs') beside the other's."""
    shard = dict(ranked_shard(observations), env_group=HALVES)
    plain = advantages_of(make_actor(GROUPS % 1), shard)[0]
    shuffled = advantages_of(make_actor(GROUPS % 1, "ablation.shuffle_advantages_of=[b]"), shard)[0]
    assert torch.equal(shuffled[:8], plain[:8])
    assert not torch.equal(shuffled[8:], plain[8:])
    assert torch.equal(shuffled[8:].sort().values, plain[8:].sort().values)
