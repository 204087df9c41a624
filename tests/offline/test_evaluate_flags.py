"""``python -m policy_and_value.offline.evaluate`` checks its flags before any work starts: a bad value is one
``config error`` line naming the flag, the value and what is allowed (exit 2), never a traceback."""

import subprocess
import sys

import pytest

from tests.assets import REPO

POLICY = str(REPO / "assets" / "quickstart" / "policy")  # 39-dim state, 4-dim actions
EXPECTED = "expected config.json + model.safetensors from train_sft or export_policy"


def test_a_missing_model_dir_is_one_line_as_a_user_runs_it():
    cmd = [sys.executable, "-m", "policy_and_value.offline.evaluate", "--model-dir", "missing/policy",
           "--tasks", "reach-v3", "--episodes", "1"]  # fmt: skip
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"config error: --model-dir='missing/policy': no such policy directory ({EXPECTED})"
    ]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--model-dir", "README.md", "--tasks", "reach-v3"], f"--model-dir='README.md': not a directory ({EXPECTED})"),
        (["--model-dir", "assets/quickstart", "--tasks", "reach-v3"],
         f"--model-dir='assets/quickstart': not a policy directory: no config.json and no model.safetensors ({EXPECTED})"),
        (["--model-dir", "assets/quickstart/reward_model", "--tasks", "reach-v3"],
         "--model-dir='assets/quickstart/reward_model': config.json is a worldrl_reward_model config, not a pi0 policy's"),
        (["--model-dir", POLICY, "--tasks", "reach-v3", "--episodes", "0"], "--episodes=0: must be >= 1"),
        (["--model-dir", POLICY, "--tasks", "reach-v3", "--num-envs", "0"], "--num-envs=0: must be >= 1"),
        (["--model-dir", POLICY, "--tasks", "reach-v3", "--max-episode-steps", "-5"],
         "--max-episode-steps=-5: must be >= 1"),
        (["--model-dir", POLICY, "--tasks", "reach-v3", "rech-v3"],
         "--tasks='rech-v3': did you mean 'reach-v3'? unknown Meta-World task; allowed: MT50 names like reach-v3"),
        (["--model-dir", POLICY], "--tasks=None: required (Meta-World task names) unless --suite names"),
        (["--model-dir", POLICY, "--tasks", "reach-v3", "--cameras", "corner", "top"],
         "--cameras='top': did you mean 'topview'? allowed: corner, corner2, corner3, corner4, topview, "
         "behindGripper, gripperPOV"),
        (["--model-dir", POLICY, "--tasks", "reach-v3", "--state-type", "proprio"],
         f"--state-type='proprio': gives a 4-dim state, the policy in {POLICY} reads 39"),
        (["--model-dir", POLICY, "--suite", "libero_nothing"],
         "--suite='libero_nothing': allowed: libero_spatial, libero_object, libero_goal, libero_10, libero_90, maniskill"),
    ],
)  # fmt: skip
def test_bad_flags_are_one_line_before_the_policy_loads(args, line, monkeypatch, capsys):
    import policy_and_value.models.pi0 as pi0
    from policy_and_value.offline.evaluate import main

    monkeypatch.chdir(REPO)
    monkeypatch.setattr(pi0, "from_pretrained", lambda *a, **k: pytest.fail("the policy was loaded"))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"config error: {line}"), err
