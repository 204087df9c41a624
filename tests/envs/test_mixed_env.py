"""MixedEnv: several env groups behind one batched env, each slice identical to its env alone."""

import pytest
import torch

from policy_and_value.config.schema import env_config
from policy_and_value.envs import make_env
from policy_and_value.envs.mixed import MixedEnv


def _gym(task, n, seed, max_steps=12):
    cfg = env_config(env_type="gym", tasks=[task], num_action_chunks=4, max_episode_steps=max_steps)
    return make_env(cfg, n, seed)


def _actions(n, k, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 2, (n, 4, 1), generator=g).float() for _ in range(k)]


def test_slices_match_the_envs_alone_and_episodes_carry_their_group():
    mixed = MixedEnv([("a", _gym("CartPole-v1", 2, 0)), ("b", _gym("CartPole-v1", 3, 1, max_steps=8))])
    alone = [_gym("CartPole-v1", 2, 0), _gym("CartPole-v1", 3, 1, max_steps=8)]
    obs, info = mixed.reset()
    ref = [e.reset()[0] for e in alone]
    assert obs["state"].shape == (5, 4) and mixed.spec.tasks == ("CartPole-v1",)
    assert torch.equal(obs["state"], torch.cat([r["state"] for r in ref]))
    groups_seen = set()
    for acts in _actions(5, 3):
        obs, r, te, tr, info = mixed.chunk_step(acts)
        parts = [alone[0].chunk_step(acts[:2]), alone[1].chunk_step(acts[2:])]
        assert torch.equal(obs["state"], torch.cat([p[0]["state"] for p in parts]))
        assert torch.equal(r, torch.cat([p[1] for p in parts]))
        assert torch.equal(te | tr, torch.cat([p[2] | p[3] for p in parts]))
        if "episode" in info:
            ep = info["episode"]
            assert ep["group_id"].tolist() == [int(i >= 2) for i in ep["env_ids"].tolist()]
            groups_seen |= set(ep["group_id"].tolist())
            assert info["final_obs"]["state"].shape == (5, 4)
    assert groups_seen == {0, 1}  # group b truncates after 8 steps, group a after 12


def test_partial_reset_and_exact_restore():
    mixed = MixedEnv([("a", _gym("CartPole-v1", 2, 0)), ("b", _gym("CartPole-v1", 2, 1))])
    mixed.reset()
    mixed.chunk_step(_actions(4, 1)[0])
    before, _ = mixed.reset(torch.tensor([3]))  # only env 1 of group b
    saved = mixed.get_state()
    first = [mixed.chunk_step(a)[0]["state"] for a in _actions(4, 2, seed=1)]
    mixed.set_state(saved)
    again = [mixed.chunk_step(a)[0]["state"] for a in _actions(4, 2, seed=1)]
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    assert before["state"].shape == (4, 4)


def test_task_ids_map_into_the_union_of_tasks_and_mismatches_are_errors():
    mixed = MixedEnv(
        [("a", _gym("CartPole-v1", 2, 0)), ("b", _gym("CartPole-v0", 1, 0)), ("c", _gym("CartPole-v1", 1, 0))]
    )
    obs, _ = mixed.reset()
    assert mixed.tasks == ["CartPole-v1", "CartPole-v0"] and obs["task_id"].tolist() == [0, 0, 1, 0]
    assert mixed.group_of_env.tolist() == [0, 0, 1, 2]
    with pytest.raises(ValueError, match="env group 'b': state_dim=6 but group 'a' has 4"):
        MixedEnv([("a", _gym("CartPole-v1", 1, 0)), ("b", _gym("Acrobot-v1", 1, 0))])


def test_each_env_carries_its_env_group():
    """The env worker hands the rollout each env's env group (None without groups): the actor weighs
    and normalises chunks by it."""
    from policy_and_value.workers.env_worker import env_group_ids

    mixed = MixedEnv([("a", _gym("CartPole-v1", 2, 0)), ("b", _gym("CartPole-v1", 3, 1))])
    base = {"env_type": "gym", "tasks": ["CartPole-v1"], "num_action_chunks": 4, "num_envs": 5}
    grouped = env_config(**base, groups=[{"name": "a", "num_envs": 2}, {"name": "b", "num_envs": 3}])
    assert env_group_ids(grouped, mixed).tolist() == [0, 0, 1, 1, 1]
    assert env_group_ids(env_config(**base), _gym("CartPole-v1", 5, 0)) is None


def test_finished_episodes_steps_are_counted_per_env_group():
    """The env worker's stats sum the finished episodes' env steps overall and per env group (how the real
    groups' env steps of mixed training are counted)."""
    from policy_and_value.workers.env_worker import EpisodeStats, merge_stats

    mixed = MixedEnv([("a", _gym("CartPole-v1", 2, 0)), ("b", _gym("CartPole-v1", 3, 1, max_steps=8))])
    mixed.reset()
    stats, lengths = EpisodeStats(), {"a": [], "b": []}
    for acts in _actions(5, 3):
        obs, r, te, tr, info = mixed.chunk_step(acts)
        if "episode" in info:
            ep = info["episode"]
            for g, n in zip(ep["group_id"].tolist(), ep["episode_len"].tolist(), strict=True):
                lengths["ab"[g]].append(n)
            stats.add_episodes(
                info, mixed.tasks, obs["task_id"], torch.ones(5, dtype=torch.bool), mixed.groups
            )
    merged = merge_stats([stats.pop()])
    assert lengths["a"] and lengths["b"]
    assert merged["a/episode_steps"] == sum(lengths["a"]) and merged["b/episode_steps"] == sum(lengths["b"])
    assert merged["episode_steps"] == sum(lengths["a"]) + sum(lengths["b"])
