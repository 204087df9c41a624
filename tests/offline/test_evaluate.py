"""Real-simulator evaluation of a pi0 policy: batched episodes, counted per task."""

from policy_and_value.config.schema import ModelConfig
from policy_and_value.envs.base import EnvSpec
from policy_and_value.models import make_policy
from policy_and_value.offline.evaluate import evaluate_in_metaworld


def test_evaluate_counts_episodes_per_task():
    tasks = ["reach-v3", "drawer-close-v3"]
    spec = EnvSpec(
        action_dim=4, num_action_chunks=4, state_dim=39, image_shape=(1, 32, 32), tasks=tuple(tasks)
    )
    policy = make_policy(ModelConfig(policy_type="pi0", add_value_head=False, pi0={"num_steps": 2}), spec)
    result = evaluate_in_metaworld(
        policy, tasks, 3, ["corner"], image_size=32, max_episode_steps=8, num_envs=4
    )
    assert set(result) == set(tasks)
    for r in result.values():
        assert r["episodes"] == 3 and 0.0 <= r["success_rate"] <= 1.0


def test_the_policy_noise_comes_from_the_seed():
    """Two evaluations with one seed give the policy the same noise, whatever the process drew before them (the
    improver's gate compares two versions so), and leave the process's random stream where it was."""
    import torch

    tasks = ["reach-v3"]
    spec = EnvSpec(
        action_dim=4, num_action_chunks=4, state_dim=39, image_shape=(1, 32, 32), tasks=tuple(tasks)
    )
    policy = make_policy(ModelConfig(policy_type="pi0", add_value_head=False, pi0={"num_steps": 2}), spec)
    actions: list[torch.Tensor] = []
    predict = policy.predict

    def recorded(obs, mode="eval"):
        out = predict(obs, mode=mode)
        actions.append(out.actions.clone())
        return out

    policy.predict = recorded
    runs = []
    for draw in (1, 2):
        torch.manual_seed(draw)  # the process's stream differs before each evaluation
        before = torch.get_rng_state()
        actions.clear()
        evaluate_in_metaworld(policy, tasks, 2, ["corner"], image_size=32, max_episode_steps=8, num_envs=2)
        assert torch.equal(torch.get_rng_state(), before)
        runs.append(torch.stack(actions))
    assert torch.equal(runs[0], runs[1])
