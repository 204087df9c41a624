"""pi0 training modes: which parameters receive gradients, imitation loss, advantage conditioning."""

from __future__ import annotations

import pytest
import torch

from policy_and_value.config.schema import ModelConfig
from policy_and_value.envs.base import EnvSpec
from policy_and_value.models.registry import make_policy as make_registered_policy


def _grads_after_ppo_loss(policy, obs, with_logprob: bool = True) -> dict[str, bool]:
    """Which parameters get a nonzero gradient from log-prob + value (or the value alone)."""
    out = policy.predict(obs, mode="train")
    logprob, value, _ = policy.evaluate({"obs": obs, **out.replay})
    (value.sum() + (logprob.sum() if with_logprob else 0)).backward()
    return {
        name: p.grad is not None and bool(p.grad.abs().sum() > 0) for name, p in policy.named_parameters()
    }


def test_full_finetune_reaches_every_tower(make_policy, obs):
    got = _grads_after_ppo_loss(make_policy("tiny", add_value_head=True, value_after_vlm=True), obs)
    for tower in ("vision_tower", "language_model", "action_expert", "value_head"):
        assert any(v for k, v in got.items() if tower in k), tower


def test_detached_value_features_train_only_the_value_head(make_policy, obs):
    for after_vlm in (False, True):
        policy = make_policy(
            "tiny", add_value_head=True, detach_value_features=True, value_after_vlm=after_vlm
        )
        grads = _grads_after_ppo_loss(policy, obs, with_logprob=False)
        assert any(v for k, v in grads.items() if k.startswith("value_head"))
        assert not any(v for k, v in grads.items() if not k.startswith("value_head")), after_vlm


def test_train_expert_only_freezes_the_prefix(make_policy, obs):
    policy = make_policy("tiny", add_value_head=True, train_expert_only=True)
    got = _grads_after_ppo_loss(policy, obs)
    prefix = [
        k for k in got if k.startswith(("model.vision_tower", "model.language_model", "model.multi_modal"))
    ]
    assert prefix and not any(got[k] for k in prefix)
    assert all(not policy.get_parameter(k).requires_grad for k in prefix)
    assert any(got[k] for k in got if "action_expert" in k)


def test_lora_trains_only_adapters_and_heads(make_policy, obs):
    policy = make_policy("tiny", add_value_head=True, is_lora=True, lora_rank=4)
    trainable = {k for k, p in policy.named_parameters() if p.requires_grad}
    assert trainable and all(
        "lora_" in k or k.startswith(("model.action_", "model.state_proj", "value_head")) for k in trainable
    )
    assert any("language_model" in k for k in trainable) and any("action_expert" in k for k in trainable)
    got = _grads_after_ppo_loss(policy, obs)
    frozen = [k for k in got if k not in trainable]
    assert frozen and not any(got[k] for k in frozen)
    assert any(got[k] for k in trainable if "lora_A" in k or "lora_B" in k)


@pytest.mark.slow
def test_flow_matching_loss_learns_a_fixed_batch(make_policy, obs):
    policy = make_policy("tiny")
    actions = torch.rand(3, 4, 4) * 2 - 1
    gen = torch.Generator().manual_seed(1)
    probes = [
        {"noise": torch.randn(3, 8, 8, generator=gen), "time": torch.rand(3, generator=gen)} for _ in range(8)
    ]

    def probe_loss() -> float:
        with torch.no_grad():
            return (
                float(sum(policy.flow_matching_loss({"obs": obs, "actions": actions, **p}) for p in probes))
                / 8
            )

    before = probe_loss()
    opt = torch.optim.AdamW(policy.parameters(), lr=2e-3)
    torch.manual_seed(0)
    for _ in range(150):
        loss = policy.flow_matching_loss({"obs": obs, "actions": actions})
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert probe_loss() < 0.3 * before


def test_advantage_condition_goes_into_the_prompt(make_policy, obs):
    policy = make_policy("tiny", with_advantage_condition=True, advantage_bin_edges=[-0.5, 0.5])
    assert policy.cfg.num_advantage_bins == 3 and policy.best_advantage_bin == 2
    bins = policy.advantage_to_bin(torch.tensor([-1.0, 0.0, 2.0]))
    assert bins.tolist() == [0, 1, 2]
    state = torch.zeros(3, 4)
    assert policy.prompts(obs, state, bins)[2] == "pick up the nut and place it onto the peg, Advantage: 2\n"
    # deployment requests the best bin: the same tokens as an explicit best-bin prompt
    tokens_best, _ = policy.tokenizer(policy.prompts(obs, state, torch.full((3,), 2)))
    out = policy.predict(obs, mode="eval")
    assert torch.equal(out.replay["lang_tokens"], tokens_best)
    # the loss depends on the advantage bin in the prompt
    batch = {
        "obs": obs,
        "actions": torch.zeros(3, 4, 4),
        "noise": torch.randn(3, 8, 8),
        "time": torch.full((3,), 0.5),
    }
    low = policy.flow_matching_loss({**batch, "advantage_bin": torch.zeros(3, dtype=torch.long)})
    high = policy.flow_matching_loss({**batch, "advantage_bin": torch.full((3,), 2)})
    assert not torch.allclose(low, high)


def test_registry_builds_pi0_for_an_env_and_loads_model_dir(tmp_path):
    from policy_and_value.models.pi0 import save_pretrained

    spec = EnvSpec(
        action_dim=4,
        num_action_chunks=3,
        state_dim=39,
        image_shape=(1, 64, 64),
        tasks=("reach-v3", "push-v3"),
    )
    cfg = ModelConfig(policy_type="pi0", pi0={"preset": "tiny", "num_steps": 2})
    policy = make_registered_policy(cfg, spec, logprob_type="chunk_level")
    assert (policy.cfg.max_state_dim, policy.cfg.num_action_chunks, policy.cfg.num_steps) == (39, 3, 2)
    save_pretrained(policy, tmp_path / "p")
    loaded = make_registered_policy(cfg, spec, logprob_type="chunk_level", model_dir=str(tmp_path / "p"))
    for (k, a), (_, b) in zip(policy.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), k


def test_gradient_checkpointing_gives_the_same_gradients(make_policy, obs):
    grads = []
    for enabled in (False, True):
        policy = make_policy("tiny", seed=5, add_value_head=True, gradient_checkpointing=enabled)
        policy.train()
        batch = {
            "obs": obs,
            "actions": torch.zeros(3, 4, 4),
            "noise": torch.ones(3, 8, 8),
            "time": torch.full((3,), 0.3),
        }
        policy.flow_matching_loss(batch).backward()
        grads.append({k: p.grad.clone() for k, p in policy.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for key in grads[0]:
        torch.testing.assert_close(grads[0][key], grads[1][key], msg=key)


def test_critic_gives_the_value_evaluate_gives(make_policy, obs):
    """The IL update reads values through ``critic`` (no denoising chain); they are evaluate's values."""
    for after_vlm in (False, True):
        policy = make_policy("tiny", add_value_head=True, value_after_vlm=after_vlm)
        batch = {"obs": obs, **policy.predict(obs, mode="train").replay}
        torch.testing.assert_close(policy.critic(batch), policy.evaluate(batch)[1])


def test_state_critic_reads_state_task_and_time_left(make_policy, obs):
    """``value_from_state``: the value moves with the time left and the task, its loss trains only the
    value head, a served obs without the time left still gets actions, and training without it fails."""
    policy = make_policy("tiny", add_value_head=True, value_from_state=True, value_num_tasks=3)
    n = obs["state"].shape[0]
    timed = {**obs, "task_id": torch.tensor([0, 1, 2]), "time_left": torch.ones(n)}
    grads = _grads_after_ppo_loss(policy, timed, with_logprob=False)
    assert any(grads[k] for k in grads if k.startswith("value_head"))
    assert not any(v for k, v in grads.items() if not k.startswith("value_head"))
    batch = {"obs": timed, **policy.predict(timed, mode="train").replay}
    later = {**batch, "obs": {**timed, "time_left": torch.zeros(n)}}
    other = {**batch, "obs": {**timed, "task_id": torch.tensor([2, 0, 1])}}
    with torch.no_grad():
        v = policy.critic(batch)
        assert not torch.allclose(v, policy.critic(later)) and not torch.allclose(v, policy.critic(other))
    assert policy.predict(obs, mode="eval").value is None
    with pytest.raises(ValueError, match="time_left"):
        policy.predict(obs, mode="train")
