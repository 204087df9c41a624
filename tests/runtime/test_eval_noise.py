"""Evaluations draw the policy's noise from a stream of their own (the rollout worker's ``eval_stream``): they do
not change the samples training draws after them, and every evaluation draws the same noise."""

import torch

from policy_and_value.config import load_config
from policy_and_value.workers.rollout_worker import RolloutWorker
from tests.runtime.test_runner_pi0 import metaworld_spec


def _worker() -> RolloutWorker:
    cfg = load_config(
        "ppo_pi0_metaworld", ["model.pi0.num_steps=2", "env.train.tasks=[reach-v3,drawer-close-v3]"]
    )
    return RolloutWorker(0, 1, 1, cfg, metaworld_spec(cfg))


def _env_out(seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    obs = {
        "images": torch.randint(0, 256, (2, 1, 64, 64, 3), dtype=torch.uint8, generator=gen),
        "state": torch.randn(2, 39, generator=gen),
        "prompt": ["reach the goal", "close the drawer"],
        "task_id": torch.arange(2),
    }
    return {"obs": obs, "alive": torch.ones(2, dtype=torch.bool)}


def test_evaluations_leave_training_samples_alone_and_repeat_their_draws():
    """Workers share this process's random streams, so each plays its part before the next is built (and seeded)."""
    plain = _worker()
    training = [plain.predict(f"s{i}", _env_out(i)) for i in (0, 3)]
    evaluated = _worker()
    first = evaluated.predict("s0", _env_out(0))
    evaluated.begin_eval()
    eval_1 = [evaluated.predict("eval", _env_out(s), "eval") for s in (1, 2)]
    evaluated.begin_eval()
    eval_2 = [evaluated.predict("eval", _env_out(s), "eval") for s in (1, 2)]
    after = evaluated.predict("s3", _env_out(3))
    # training draws what it draws without the evaluations in between
    assert torch.equal(first, training[0]) and torch.equal(after, training[1])
    assert all(
        torch.equal(a, b) for a, b in zip(eval_1, eval_2, strict=True)
    )  # each evaluation: the same noise
    assert not torch.equal(eval_1[0], evaluated.predict("eval", _env_out(1), "eval"))  # the stream goes on
