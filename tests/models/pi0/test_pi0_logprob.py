"""RL sampling: the log-prob recomputed by ``evaluate`` from ``replay`` equals the rollout's, per method."""

from __future__ import annotations

import math

import pytest
import torch

from policy_and_value.models.pi0.sampling import gaussian_logprob, sde_sigma, time_grid, transition

CASES = [
    ("flow_sde", False, "tiny"),
    ("flow_sde", True, "tiny"),
    ("flow_noise", False, "tiny"),
    ("flow_noise", True, "tiny"),
    ("flow_sde", False, "tiny_pi05"),
    ("flow_noise", True, "tiny_pi05"),
]


@pytest.mark.parametrize(("method", "joint", "preset"), CASES)
def test_recomputed_logprob_matches_rollout(make_policy, obs, method, joint, preset):
    policy = make_policy(preset, noise_method=method, joint_logprob=joint, add_value_head=True)
    out = policy.predict(obs, mode="train")
    steps = out.replay["denoise_mask"]
    assert steps.sum(-1).tolist() == ([policy.cfg.num_steps] * 3 if joint else [1, 1, 1])
    assert torch.all(out.logprob != 0)
    logprob, value, entropy = policy.evaluate({"obs": obs, **out.replay})
    torch.testing.assert_close(logprob, out.logprob, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(value, out.value, atol=1e-5, rtol=1e-5)
    ratio = torch.exp(logprob - out.logprob)
    torch.testing.assert_close(ratio, torch.ones_like(ratio), atol=1e-5, rtol=0)
    assert entropy.shape == logprob.shape and torch.isfinite(entropy).all()
    # the chain ends at the executed (normalised) actions
    chains = out.replay["chains"]
    torch.testing.assert_close(chains[:, -1, :4, :4], out.actions)


def test_logprob_gradient_reaches_noise_head(make_policy, obs):
    policy = make_policy(noise_method="flow_noise")
    out = policy.predict(obs)
    logprob, _, entropy = policy.evaluate({"obs": obs, **out.replay})
    (logprob.sum() + entropy.sum()).backward()
    assert policy.noise_head.net[0].weight.grad.abs().sum() > 0
    assert policy.model.action_out_proj.weight.grad.abs().sum() > 0


def test_ode_and_eval_mode_are_deterministic_transitions(make_policy, obs):
    policy = make_policy(noise_method="flow_ode")
    out = policy.predict(obs, mode="train")
    assert not out.replay["denoise_mask"].any() and torch.all(out.logprob == 0)
    lp, _, ent = policy.evaluate({"obs": obs, **out.replay})
    assert torch.all(lp == 0) and torch.all(ent == 0)
    sde = make_policy(noise_method="flow_sde", noise_level=0.0)
    torch.manual_seed(3)
    a = sde.predict(obs, mode="train").actions
    torch.manual_seed(3)
    b = sde.predict(obs, mode="eval").actions
    torch.testing.assert_close(a, b)  # a zero noise level is the ODE


def test_transition_math():
    k, dt = 4, 0.25
    grid = time_grid(k)
    assert grid.tolist() == [1.0, 0.75, 0.5, 0.25, 0.0]
    sigma = sde_sigma(torch.tensor([1.0, 0.5]), dt, 0.5)
    torch.testing.assert_close(sigma, torch.tensor([0.5 * math.sqrt(1 / dt), 0.5]))
    x, v, t = torch.randn(2, 3, 2), torch.randn(2, 3, 2), torch.tensor([1.0, 0.5])
    mean, std = transition(x, v, t, dt, "flow_ode")
    torch.testing.assert_close(mean, x - dt * v)
    assert torch.all(std == 0)
    mean, std = transition(x, v, t, dt, "flow_sde", noise_level=0.5)
    drift = x - dt * v - (sigma**2 * dt / (2 * t))[:, None, None] * (x + (1 - t)[:, None, None] * v)
    torch.testing.assert_close(mean, drift)
    torch.testing.assert_close(std[:, 0, 0], sigma * math.sqrt(dt))
    lp = gaussian_logprob(torch.zeros(1), torch.zeros(1), torch.ones(1))
    torch.testing.assert_close(lp, torch.tensor([-0.5 * math.log(2 * math.pi)]))
