"""GymEnv: contract shapes, chunk semantics, auto-reset, truncation, determinism, exact state restore."""

import torch

from policy_and_value.config.schema import env_config
from policy_and_value.envs import make_env


def _env(task="CartPole-v1", n=3, chunk=4, max_steps=30, seed=0, **kw):
    return make_env(
        env_config(env_type="gym", tasks=[task], num_action_chunks=chunk, max_episode_steps=max_steps, **kw),
        n,
        seed,
    )


def _actions(n, chunk, discrete=True, steps=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    if discrete:
        return [torch.randint(0, 2, (n, chunk, 1), generator=g).float() for _ in range(steps)]
    return [torch.rand(n, chunk, 1, generator=g) * 4 - 2 for _ in range(steps)]


def test_contract_shapes_discrete():
    env = _env()
    obs, _ = env.reset()
    assert obs["state"].shape == (3, 4) and obs["state"].dtype == torch.float32
    assert obs["task_id"].dtype == torch.int64 and obs["prompt"] == ["CartPole-v1"] * 3
    assert "images" not in obs
    assert env.spec.discrete_actions == 2 and env.spec.action_dim == 1
    obs, r, te, tr, info = env.chunk_step(torch.zeros(3, 4, 1))
    assert r.shape == (3, 4) and te.dtype == torch.bool and tr.shape == (3,)
    env.close()


def test_no_reward_after_episode_end_within_chunk_and_episode_info():
    env = _env(chunk=8, max_steps=200)
    env.reset()
    seen_end = False
    for a in _actions(3, 8, steps=20):
        obs, r, te, tr, info = env.chunk_step(torch.ones_like(a))  # always push right: falls quickly
        if "episode" in info:
            seen_end = True
            ep = info["episode"]
            for j, i in enumerate(ep["env_ids"].tolist()):
                assert te[i]
                assert ep["return"][j] == ep["episode_len"][j]  # CartPole: reward 1 per step
            ended = te | tr
            # the env stopped collecting reward within the chunk: rewards are a prefix of ones
            for i in torch.nonzero(ended).flatten().tolist():
                row = r[i]
                k = int(row.sum())
                assert torch.all(row[:k] == 1) and torch.all(row[k:] == 0)
            assert "final_obs" in info
    assert seen_end
    env.close()


def test_truncation_at_max_episode_steps_continuous():
    env = _env("Pendulum-v1", n=2, chunk=5, max_steps=10)
    env.reset()
    lens = []
    for a in _actions(2, 5, discrete=False, steps=4):
        _, r, te, tr, info = env.chunk_step(a)
        if "episode" in info:
            lens += info["episode"]["episode_len"].tolist()
            assert tr.all() and not te.any()
    assert lens == [10, 10, 10, 10]
    assert env.spec.action_low == (-2.0,) and env.spec.discrete_actions is None
    env.close()


def test_seeded_runs_are_identical_and_state_restore_is_exact():
    acts = _actions(3, 4, steps=16)
    a, b = _env(seed=5), _env(seed=5)
    a.reset()
    b.reset()
    for x in acts[:6]:
        ra = a.chunk_step(x)
        rb = b.chunk_step(x)
        assert torch.equal(ra[0]["state"], rb[0]["state"]) and torch.equal(ra[1], rb[1])
    state = a.get_state()
    first = [a.chunk_step(x) for x in acts[6:]]
    c = _env(seed=99)
    c.set_state(state)
    second = [c.chunk_step(x) for x in acts[6:]]
    for x, y in zip(first, second, strict=True):
        assert torch.equal(x[0]["state"], y[0]["state"]) and torch.equal(x[1], y[1])


def test_without_auto_reset_finished_envs_stay_finished_until_reset():
    env = _env(chunk=4, max_steps=8, auto_reset=False)
    env.reset()
    episodes = 0
    for _ in range(6):
        _, r, te, tr, info = env.chunk_step(torch.zeros(3, 4, 1))
        episodes += len(info.get("episode", {}).get("env_ids", []))
    assert episodes == 3  # one episode per env, no more
    assert r.sum() == 0
    env.reset()
    _, r, *_ = env.chunk_step(torch.zeros(3, 4, 1))
    assert r.sum() > 0


def test_fixed_reset_state_ids_share_initial_state_within_groups():
    env = _env(n=4, use_fixed_reset_state_ids=True, group_size=2)
    obs, _ = env.reset()
    s = obs["state"]
    assert torch.equal(s[0], s[1]) and torch.equal(s[2], s[3]) and not torch.equal(s[0], s[2])
