"""The full Ray runtime on CartPole: placements, exact resume, overlap, metrics, clean shutdown on SIGTERM
(a worker that fails: test_worker_failure.py)."""

import os
import signal
from pathlib import Path

import pytest
import ray

from policy_and_value.runner.runner import EmbodiedRunner
from policy_and_value.runner.stop import JobStopped
from tests.runtime.jobs import run_and_read

pytestmark = pytest.mark.slow

TINY = [
    "env.train.num_envs=4",
    "env.eval.num_envs=2",
    "env.eval_episodes=2",
    "env.eval.max_episode_steps=40",
    "algorithm.n_chunk_steps=16",
    "actor.global_batch_size=32",
    "actor.micro_batch_size=16",
    "runner.progress_bar=false",
    "runner.val_check_interval=2",
]


def _run(tmp_path: Path, name: str, extra: list[str], own_ray: bool = False) -> list[dict]:
    return run_and_read("ppo_mlp_cartpole", tmp_path, name, [*TINY, *extra], own_ray=own_ray)


def _comparable(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("time/")}


def test_resume_reproduces_uninterrupted_run(tmp_path, monkeypatch):
    """A run stopped by SIGTERM during step 2 (no save_interval) checkpoints step 2 and shuts Ray down; resumed
    from there it repeats the uninterrupted run's steps 3 and 4 exactly."""
    step = EmbodiedRunner.step

    def step_then_sigterm(runner: EmbodiedRunner) -> dict[str, float]:
        if runner.global_step == 1:  # the signal arrives while step 2 runs
            os.kill(os.getpid(), signal.SIGTERM)
        return step(runner)

    monkeypatch.setattr(EmbodiedRunner, "step", step_then_sigterm)
    with pytest.raises(
        JobStopped, match=r"stopped by SIGTERM after step 2: continue with runner\.resume_dir="
    ):
        _run(tmp_path, "stopped", ["runner.max_steps=4", "runner.save_interval=-1"], own_ray=True)
    monkeypatch.setattr(EmbodiedRunner, "step", step)
    assert not ray.is_initialized()
    ckpt = tmp_path / "stopped" / "checkpoints" / "global_step_2"
    assert (ckpt / "actor" / ".metadata").exists()
    assert (ckpt / "rollout" / "model.safetensors").exists()
    assert (ckpt / "runner_state.pt").exists()
    # the uninterrupted run and the resumed one share this process's Ray (the stopped one started its own)
    full = _run(tmp_path, "full", ["runner.max_steps=4", "runner.save_interval=2"])
    assert full[0]["train/actor/ratio"] == pytest.approx(1.0, abs=0.2)  # the shared placement trains
    assert (tmp_path / "full" / "checkpoints" / "global_step_2" / "runner_state.pt").exists()
    resumed = _run(
        tmp_path, "resumed", ["runner.max_steps=4", "runner.save_interval=-1", f"runner.resume_dir={ckpt}"]
    )
    assert [r["step"] for r in resumed] == [3, 4]
    for a, b in zip(full[2:], resumed, strict=True):
        assert _comparable(a) == _comparable(b)
    # the metric names of the architecture page
    for key in (
        "time/step", "time/sync_weights", "time/generate_rollouts", "time/cal_adv_and_returns",
        "time/actor_training", "env/return", "env/episode_len", "env/reward", "rollout/rewards",
        "rollout/advantages_mean", "rollout/returns_max", "train/actor/policy_loss", "train/actor/ratio",
        "train/actor/clip_fraction", "train/actor/approx_kl", "train/actor/grad_norm", "train/actor/lr",
        "train/actor/entropy", "train/critic/value_loss", "train/critic/explained_variance", "eval/return",
    ):  # fmt: skip
        assert key in full[1], key


def test_a_sigterm_while_the_workers_start_stops_before_the_first_step(tmp_path, monkeypatch):
    """ray.init installs a SIGTERM handler that exits at once; the runner takes it back as soon as Ray is up, so
    a SIGTERM while the workers start stops the job cleanly (JobStopped, Ray shut down), as one during a step."""
    from policy_and_value.runner import runner as runner_module

    place = runner_module.parse_placement

    def sigterm_then_place(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # Ray has started: the job's workers are about to be placed
        return place(*args, **kwargs)

    monkeypatch.setattr(runner_module, "parse_placement", sigterm_then_place)
    with pytest.raises(JobStopped, match=r"stopped by SIGTERM after step 0: no checkpoint was written"):
        _run(tmp_path, "early", ["runner.max_steps=2"], own_ray=True)
    assert not ray.is_initialized()
    assert not (tmp_path / "early" / "checkpoints").exists()


def test_overlap_trains_one_step_off_policy_and_resumes_exactly(tmp_path):
    """rollout.overlap_training: step 2's batch is generated during step 1's update (lag 1); none is
    generated during a step that saves a checkpoint (step 2) or the last, so resuming repeats the full run.
    The rollout is pipelined too (two stages), so the separate placement's own way of running is covered."""
    overlap = [
        "cluster=separate",
        "rollout.overlap_training=true",
        "rollout.pipeline_stage_num=2",  # two half-batches: one steps while the other infers
        "runner.max_steps=4",
    ]
    full = _run(tmp_path, "full", [*overlap, "runner.save_interval=2"])
    assert [r["rollout/policy_lag"] for r in full] == [0.0, 1.0, 0.0, 1.0]
    assert full[0]["train/actor/ratio"] == pytest.approx(1.0, abs=0.2)  # the separate placement trains
    assert full[0]["time/overlapped_generation"] > 0 and full[1]["time/overlapped_generation"] == 0
    ckpt = tmp_path / "full" / "checkpoints" / "global_step_2"
    resumed = _run(tmp_path, "resumed", [*overlap, "runner.save_interval=-1", f"runner.resume_dir={ckpt}"])
    assert [r["step"] for r in resumed] == [3, 4]
    for a, b in zip(full[2:], resumed, strict=True):
        assert _comparable(a) == _comparable(b)


# Each placement is a job of its own (about 20 s of start-up), so each is run once in the suite: "shared"
# (this config's own) by test_resume_reproduces_uninterrupted_run, "separate" with a pipelined rollout by
# test_overlap_trains_one_step_off_policy_and_resumes_exactly, "partial_sharing" by the quickstart's test
# (tests/world_model_rl) and the pi0 test, and packed onto two devices (four actor ranks) by the
# multi-node test (tests/runtime/test_multi_node.py).
