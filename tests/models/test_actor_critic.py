"""The small actor-critic: shapes, logprob recomputation (ratio 1), determinism in eval, gradients, obs norm."""

import pytest
import torch

from policy_and_value.config.schema import ModelConfig
from policy_and_value.envs.base import EnvSpec
from policy_and_value.models import make_policy

IMG_SPEC = EnvSpec(4, 3, 5, (2, 32, 32), ("a", "b"), None, (-1.0,) * 4, (1.0,) * 4)
DISCRETE_SPEC = EnvSpec(1, 2, 4, None, ("CartPole-v1",), 3)


def _obs(spec, n=5):
    obs = {
        "state": torch.randn(n, spec.state_dim),
        "task_id": torch.arange(n) % len(spec.tasks),
        "prompt": ["x"] * n,
    }
    if spec.image_shape:
        obs["images"] = torch.randint(0, 255, (n, *spec.image_shape, 3), dtype=torch.uint8)
    return obs


@pytest.mark.parametrize(
    "logprob_type,shape", [("chunk_level", (5,)), ("action_level", (5, 3)), ("token_level", (5, 3, 4))]
)
def test_cnn_policy_shapes_and_exact_recompute(logprob_type, shape):
    policy = make_policy(ModelConfig(policy_type="cnn_actor_critic", obs_norm=True), IMG_SPEC, logprob_type)
    obs = _obs(IMG_SPEC)
    out = policy.predict(obs)
    assert out.actions.shape == (5, 3, 4) and out.logprob.shape == shape and out.value.shape == (5,)
    lp, v, ent = policy.evaluate({"obs": obs, **out.replay})
    assert torch.allclose(lp, out.logprob, atol=1e-6) and torch.allclose(v, out.value)
    assert torch.exp(lp - out.logprob).sub(1).abs().max() < 1e-5 and ent.shape == shape


def test_discrete_policy_and_value_per_action():
    policy = make_policy(
        ModelConfig(policy_type="mlp_actor_critic"), DISCRETE_SPEC, "action_level", value_per_action=True
    )
    out = policy.predict(_obs(DISCRETE_SPEC))
    assert out.actions.shape == (5, 2, 1) and set(out.actions.unique().tolist()) <= {0.0, 1.0, 2.0}
    assert out.value.shape == (5, 2)
    lp, _, _ = policy.evaluate({"obs": _obs(DISCRETE_SPEC), **out.replay})
    assert lp.shape == (5, 2)


def test_eval_mode_is_deterministic_and_train_mode_samples():
    policy = make_policy(ModelConfig(policy_type="cnn_actor_critic"), IMG_SPEC)
    obs = _obs(IMG_SPEC)
    assert torch.equal(policy.predict(obs, "eval").actions, policy.predict(obs, "eval").actions)
    assert not torch.equal(policy.predict(obs).actions, policy.predict(obs).actions)


def test_gradients_reach_encoder_heads_and_log_std():
    policy = make_policy(ModelConfig(policy_type="cnn_actor_critic"), IMG_SPEC)
    obs = _obs(IMG_SPEC)
    out = policy.predict(obs)
    lp, v, ent = policy.evaluate({"obs": obs, **out.replay})
    (lp.sum() + v.sum() + ent.sum()).backward()
    for name in (
        "image_encoder.conv.0.weight",
        "actor_head.weight",
        "value_head.weight",
        "log_std",
        "task_embed.weight",
    ):
        assert dict(policy.named_parameters())[name].grad is not None, name


def test_obs_norm_statistics_live_in_buffers():
    policy = make_policy(ModelConfig(policy_type="mlp_actor_critic", obs_norm=True), DISCRETE_SPEC)
    x = torch.randn(1000, 4) * 3 + 2
    policy.update_obs_norm(x)
    sd = policy.state_dict()
    assert torch.allclose(sd["obs_norm.mean"], x.mean(0), atol=1e-2)
    assert torch.allclose(sd["obs_norm.var"], x.var(0, unbiased=False), atol=0.1)
