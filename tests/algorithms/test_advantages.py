"""GAE (chunk- and action-level), GRPO and distributed advantage normalisation."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from policy_and_value.algorithms import (
    compute_gae,
    compute_grpo,
    group_returns,
    group_returns_to_go,
    grpo_credit,
    normalise_to_go_in_groups,
    normalize_advantages,
)


def _reference_gae(rewards, values, dones, gamma, lam):
    T, B = rewards.shape
    adv = torch.zeros(T, B)
    for b in range(B):
        running = 0.0
        for t in reversed(range(T)):
            nd = 1.0 - float(dones[t, b])
            delta = rewards[t, b] + gamma * values[t + 1, b] * nd - values[t, b]
            running = delta + gamma * lam * nd * running
            adv[t, b] = running
    return adv


def test_gae_matches_reference_and_dones_cut_recursion():
    g = torch.Generator().manual_seed(0)
    r, v = torch.randn(7, 3, generator=g), torch.randn(8, 3, generator=g)
    d = torch.zeros(7, 3)
    d[2, 0] = d[5, 2] = 1
    adv, ret = compute_gae(r, v, d, 0.97, 0.9)
    assert torch.allclose(adv, _reference_gae(r, v, d, 0.97, 0.9), atol=1e-6)
    assert torch.allclose(ret, adv + v[:-1])
    # with lambda = 1 and gamma = 1 the return at a done step is just its reward
    adv1, ret1 = compute_gae(r, v, d, 1.0, 1.0)
    assert ret1[2, 0] == pytest.approx(r[2, 0].item())


def test_action_level_gae_equals_flattened_time():
    g = torch.Generator().manual_seed(1)
    T, B, C = 4, 2, 3
    r, v = torch.randn(T, B, C, generator=g), torch.randn(T + 1, B, C, generator=g)
    d = torch.tensor([[0, 0], [1, 0], [0, 0], [0, 1]], dtype=torch.float32)
    adv, _ = compute_gae(r, v, d, 0.9, 0.8)
    flat_r = r.permute(0, 2, 1).reshape(T * C, B)
    flat_v = torch.cat([v[:-1].permute(0, 2, 1).reshape(T * C, B), v[-1, :, 0][None]])
    flat_d = torch.zeros(T, C, B)
    flat_d[:, -1] = d
    ref = _reference_gae(flat_r, flat_v, flat_d.reshape(T * C, B), 0.9, 0.8)
    assert torch.allclose(adv, ref.reshape(T, C, B).permute(0, 2, 1), atol=1e-6)


def test_grpo_normalises_within_groups_and_masks():
    rewards = torch.tensor([[1.0, 0.0, 2.0, 2.0], [1.0, 0.0, 0.0, 4.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [0, 1, 1, 0]]).float()
    adv = compute_grpo(rewards, mask, group_size=2)
    # group 0 returns (2, 0): +1/-1; group 1 returns (2, 6): -1/+1
    assert torch.allclose(adv[0], torch.tensor([1.0, -1.0, -1.0, 1.0]), atol=1e-4)
    assert adv[2, 0] == 0 and adv[2, 3] == 0 and adv[2, 1] == pytest.approx(-1.0, abs=1e-4)
    assert group_returns(rewards, mask, 2).tolist() == [[2.0, 0.0], [2.0, 6.0]]
    with pytest.raises(ValueError, match="algorithm.group_size=3"):
        group_returns(rewards, mask, 3)


def test_returns_to_go_credit_a_chunk_with_what_followed_it():
    """Reward to go per chunk, centred on the group's mean at the same chunk index and scaled by the group's
    spread over all its chunks: env 0's reward at t=0 is credited to its chunk 0 only; a chunk past its
    episode's end (mask 0) gets 0 and does not enter the group's statistics."""
    rewards = torch.tensor([[3.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 2.0], [0.0, 2.0, 5.0, 1.0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 0, 1]]).float()
    to_go = group_returns_to_go(rewards, mask, group_size=2)
    assert to_go.shape == (3, 2, 2)
    assert to_go[:, 0].tolist() == [[3.0, 3.0], [0.0, 3.0], [0.0, 2.0]]
    assert to_go[:, 1].tolist() == [[2.0, 4.0], [1.0, 3.0], [0.0, 1.0]]
    adv = normalise_to_go_in_groups(to_go, mask)
    assert adv.shape == (3, 4)
    # group 0 centred: (0, 0), (-1.5, 1.5), (-1, 1); spread sqrt(6.5 / 6)
    scale0 = (6.5 / 6) ** 0.5
    assert torch.allclose(
        adv[:, :2], torch.tensor([[0.0, 0.0], [-1.5, 1.5], [-1.0, 1.0]]) / scale0, atol=1e-4
    )
    # group 1: env 2 has ended at t=2 (0, left out), env 3 alone there has nothing to be compared with
    assert torch.allclose(
        adv[:, 2:], torch.tensor([[-1.0, 1.0], [-1.0, 1.0], [0.0, 0.0]]) / 0.8**0.5, atol=1e-4
    )
    for g in range(2):  # unit spread over each group's valid chunks
        m = mask[:, 2 * g : 2 * g + 2].bool()
        assert (adv[:, 2 * g : 2 * g + 2][m] ** 2).mean() == pytest.approx(1.0, abs=1e-4)
    # episode-level GRPO sees equal returns in group 0 (3, 3) and credits none of its chunks, though env 0
    # earned nothing after its first chunk and env 1 everything after it
    assert torch.all(compute_grpo(rewards, mask, 2)[:, :2] == 0)


def test_step_credit_gives_a_chunk_its_own_reward_against_the_group_at_that_index():
    """grpo_return=step: a chunk's advantage is its own reward (a potential's change: what the chunk gained),
    centred on the group's at the same chunk index and scaled by the group's spread over all its chunks."""
    rewards = torch.tensor([[3.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 2.0], [0.0, 2.0, 5.0, 1.0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 0, 1]]).float()
    grouped = group_returns(rewards, mask, 2)
    adv, returns = grpo_credit(grouped, rewards, mask, credit="step")
    assert torch.equal(returns, rewards * mask)
    # group 0 centred: (1.5, -1.5), (-0.5, 0.5), (-1, 1); spread sqrt(7 / 6)
    expected = torch.tensor([[1.5, -1.5], [-0.5, 0.5], [-1.0, 1.0]]) / (7 / 6) ** 0.5
    assert torch.allclose(adv[:, :2], expected, atol=1e-4)
    assert adv[2, 2] == 0 and adv[2, 3] == 0  # env 2 ended; env 3 alone at t=2: nothing to compare with
    to_go, _ = grpo_credit(grouped, rewards, mask, credit="to_go")
    assert not torch.allclose(adv, to_go)


def test_normalize_single_process_masked():
    adv = torch.tensor([[1.0, 2.0], [3.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    out = normalize_advantages(adv, mask)
    sel = out[mask.bool()]
    assert sel.mean().abs() < 1e-6 and sel.std(unbiased=False) == pytest.approx(1.0, abs=1e-4)
    assert out[1, 1] == 0


def _worker(rank, world, port, data, result):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    adv, mask = data[rank]
    result[rank] = normalize_advantages(adv, mask, group=dist.group.WORLD)
    dist.destroy_process_group()


@pytest.mark.slow
def test_normalize_over_ranks_equals_whole_batch():
    import socket

    g = torch.Generator().manual_seed(3)
    adv, mask = torch.randn(5, 6, generator=g) * 3 + 1, (torch.rand(5, 6, generator=g) > 0.2).float()
    whole = normalize_advantages(adv, mask)
    data = [(adv[:, :3].clone(), mask[:, :3].clone()), (adv[:, 3:].clone(), mask[:, 3:].clone())]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    manager = mp.Manager()
    result = manager.dict()
    mp.spawn(_worker, args=(2, port, data, result), nprocs=2, join=True)
    assert torch.allclose(torch.cat([result[0], result[1]], dim=1), whole, atol=1e-5)
