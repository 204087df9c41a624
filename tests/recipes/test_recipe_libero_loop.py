"""``worldrl recipe libero-loop`` in Python on LIBERO-shaped episodes made here (``--episodes-dir``): its offline
stages run for real, ``--stop-after`` stops where it says, a re-run skips what is done, and the remaining RL stages'
commands are the jobs the loop's report ran (LIBERO's own stages are tested in tests/envs/test_libero_loop.py)."""

import pytest

from tests.recipes.libero_episodes import write_libero_episodes
from toolkits.recipes import libero_loop

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def episodes(tmp_path_factory) -> str:
    """Two episodes a task of the loop's three tasks (one successful)."""
    return write_libero_episodes(tmp_path_factory.mktemp("libero") / "episodes", steps=10)


def test_the_offline_stages_run_stop_where_asked_and_a_rerun_skips_them(episodes, tmp_path, capsys):
    out = tmp_path / "loop"
    argv = ["--out", str(out), "--episodes-dir", episodes, "--rm-steps", "2", "--il-steps", "2",
            "--stop-after", "offline anchor episodes"]  # fmt: skip
    assert libero_loop.main(argv) == 0
    printed = capsys.readouterr().out
    for path in ("rm/model/config.json", "episodes_labelled/index.json", "sft/policy/config.json",
                 "offline_episodes/index.json"):  # fmt: skip
        assert (out / path).is_file(), path
    assert "libero-loop: done in" in printed and "collect episodes" not in printed  # the episodes were given
    assert "evaluate imitation" not in printed and not (out / "eval_imitation.md").exists()  # stopped after
    assert libero_loop.main(argv) == 0  # a re-run: every stage's output is there
    printed = capsys.readouterr().out
    assert printed.count("exists, skipped") == 4 and "== reward model: " in printed


def test_the_rl_stages_run_the_loop_jobs_on_the_models_it_made(episodes, tmp_path):
    """Each RL stage is ``python -m policy_and_value.train JOB ...`` on the loop's own folders."""
    args = libero_loop.Args(out=str(tmp_path), episodes_dir=episodes)
    names = [name for name, _, _ in libero_loop.plan(args)]
    assert names == libero_loop.STAGES[1:]  # no collection when the episodes are given
    calls: list[tuple[str, str, list[str]]] = []

    class Recorder:
        def tool(self, name, module, argv):
            calls.append((name, module, argv))

    for name, _, step in libero_loop.plan(args):
        if name in ("PPO in LIBERO", "rl_release_libero"):
            step(Recorder(), name)
    (_, m1, ppo), (_, m2, rl) = calls
    assert (
        m1 == m2 == "policy_and_value.train" and ppo[0] == "ppo_pi0_libero" and rl[0] == "rl_release_libero"
    )
    assert (
        f"rollout.model_dir={tmp_path}/sft/policy" in ppo
        and f"env.train.dynamics_model_image_root={episodes}" in rl
    )
    assert "runner.max_steps=6" in rl and "env.eval_episodes=18" in rl  # 3 tasks x 6 episodes


def test_an_unknown_stage_is_one_line_before_any_work(tmp_path, capsys):
    assert libero_loop.main(["--out", str(tmp_path / "x"), "--stop-after", "PPO"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--stop-after='PPO': no such stage; allowed: collect episodes," in err
    assert not (tmp_path / "x").exists()
