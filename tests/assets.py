"""Checks of the models shipped under assets/ (each folder lists its files in SHA256SUMS), and builders
that tests share on top of them."""

import hashlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUICKSTART_TASKS = ("reach-v3", "drawer-close-v3", "button-press-topdown-v3")


def assert_matches_sha256sums(root: Path) -> int:
    """Every file ``root/SHA256SUMS`` lists has its digest; returns how many files it lists."""
    lines = (root / "SHA256SUMS").read_text().splitlines()
    for line in lines:
        digest, name = line.split()
        assert hashlib.sha256((root / name).read_bytes()).hexdigest() == digest, name
    return len(lines)


def shipped_policy_actor(*overrides: str):
    """A single-rank actor worker of ``rl_release_video`` (with ``overrides``) on the shipped imitation policy:
    2 views of 64x64, the full 39-dim state, chunks of 4 actions of the quickstart's three tasks."""
    from policy_and_value.config import load_config
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.workers.actor_worker import ActorWorker

    cfg = load_config(
        "rl_release_video", [f"rollout.model_dir={REPO / 'assets' / 'quickstart' / 'policy'}", *overrides]
    )
    spec = EnvSpec(
        action_dim=4, num_action_chunks=4, state_dim=39, image_shape=(2, 64, 64), tasks=QUICKSTART_TASKS
    )
    return ActorWorker(0, 1, 1, cfg, spec)


def write_complete_checkpoint(step_dir: Path, step: int, weights: dict | None = None) -> Path:
    """A small checkpoint laid out as the runner writes one (runner state, actor DCP, rollout safetensors),
    which ``runner.resume_dir`` validation accepts; ``weights`` default to one small tensor."""
    import torch
    import torch.distributed.checkpoint as dcp
    from safetensors.torch import save_file

    from toolkits.base.checkpoint import save_runner_state

    weights = weights if weights is not None else {"w": torch.zeros(2)}
    (step_dir / "rollout").mkdir(parents=True)
    save_runner_state(str(step_dir), step, {"rng": list(range(1000))})
    dcp.save({"model": weights}, checkpoint_id=str(step_dir / "actor"))
    save_file(weights, str(step_dir / "rollout" / "model.safetensors"))
    return step_dir
