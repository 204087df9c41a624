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
