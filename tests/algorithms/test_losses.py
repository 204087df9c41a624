"""PPO policy loss (asymmetric and dual clip), value loss (clip + Huber), LR schedule, optimiser groups."""

import pytest
import torch

from policy_and_value.algorithms import (
    broadcast_to_logprob,
    build_optimizer,
    explained_variance,
    ppo_policy_loss,
    value_loss,
)
from policy_and_value.config.schema import OptimConfig
from toolkits.base.lr_schedule import build_scheduler, warmup_cosine_lambda


def test_ratio_one_gives_minus_mean_advantage_and_no_clipping():
    lp = torch.randn(6, 3)
    adv = torch.randn(6)
    loss, m = ppo_policy_loss(lp, lp.clone(), adv, torch.ones(6), 0.2, 0.3)
    assert loss.item() == pytest.approx(-adv.mean().item(), abs=1e-6)
    assert (
        m["clip_fraction"] == 0 and m["ratio"] == pytest.approx(1.0) and m["approx_kl"] == pytest.approx(0.0)
    )


def test_asymmetric_clipping_both_sides():
    old = torch.zeros(2)
    new = torch.log(torch.tensor([2.0, 0.1]))  # ratios 2.0 and 0.1
    adv = torch.tensor([1.0, -1.0])
    loss, m = ppo_policy_loss(new, old, adv, torch.ones(2), clip_ratio_low=0.2, clip_ratio_high=0.3)
    # positive advantage: min(2.0, 1.3) -> 1.3; negative advantage: max(0.1, 0.8) -> -0.8
    assert loss.item() == pytest.approx((-1.3 + 0.8) / 2, abs=1e-6)
    assert m["clip_fraction"] == 1.0


def test_dual_clip_bounds_negative_advantage_loss():
    new, old = torch.log(torch.tensor([10.0])), torch.zeros(1)
    adv = torch.tensor([-1.0])
    loss, _ = ppo_policy_loss(new, old, adv, torch.ones(1), 0.2, 0.2, clip_ratio_c=3.0)
    assert loss.item() == pytest.approx(3.0)
    loss_nc, _ = ppo_policy_loss(new, old, adv, torch.ones(1), 0.2, 0.2)
    assert loss_nc.item() == pytest.approx(10.0)


def test_mask_excludes_samples_and_broadcast_shapes():
    lp = torch.zeros(4, 2, 3)
    adv = torch.tensor([1.0, 2.0, 3.0, 100.0])
    loss, _ = ppo_policy_loss(lp, lp, adv, torch.tensor([1.0, 1.0, 1.0, 0.0]), 0.2, 0.2)
    assert loss.item() == pytest.approx(-2.0)
    assert broadcast_to_logprob(torch.ones(4, 2), lp).shape == (4, 2, 3)
    with pytest.raises(ValueError, match="finer"):
        broadcast_to_logprob(torch.ones(4, 2), torch.zeros(4))


def test_value_loss_clip_and_huber():
    ret = torch.tensor([0.0])
    old = torch.tensor([1.0])
    new = torch.tensor([0.5])
    # unclipped 0.5*0.25=0.125; clipped (value_clip 0.1 -> 0.9) 0.5*0.81=0.405 -> max
    loss, _ = value_loss(new, old, ret, torch.ones(1), value_clip=0.1)
    assert loss.item() == pytest.approx(0.405)
    loss_h, _ = value_loss(torch.tensor([5.0]), old, ret, torch.ones(1), huber_delta=1.0)
    assert loss_h.item() == pytest.approx(4.5)  # delta * (|x| - delta / 2)
    ev = explained_variance(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0]), torch.ones(3))
    assert ev.item() == pytest.approx(1.0)


def test_warmup_cosine_schedule_and_value_lr_group():
    fn = warmup_cosine_lambda(warmup_steps=4, total_steps=14, min_lr_ratio=0.1)
    assert fn(0) == pytest.approx(0.25) and fn(3) == pytest.approx(1.0)
    assert fn(4) == pytest.approx(1.0) and fn(9) == pytest.approx(0.55) and fn(14) == pytest.approx(0.1)
    assert fn(100) == pytest.approx(0.1)
    model = torch.nn.ModuleDict({"body": torch.nn.Linear(2, 2), "value_head": torch.nn.Linear(2, 1)})
    cfg = OptimConfig(lr=1e-3, value_lr=5e-3, lr_scheduler="cosine", lr_warmup_steps=2, min_lr_ratio=0.0)
    opt = build_optimizer(model, cfg)
    sched = build_scheduler(opt, cfg, total_steps=10)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([5e-4, 2.5e-3])
    for _ in range(2):
        opt.step()
        sched.step()
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-3, 5e-3])
