"""Validating a config imports neither transformers nor diffusers (seconds of every job's start-up and of
every ``--validate-only``); the packages' names still import on first use."""

import subprocess
import sys

CHECK = """
import sys
from policy_and_value.config import load_config
load_config("quickstart", [])
heavy = sorted(m for m in ("transformers", "diffusers", "ray") if m in sys.modules)
assert not heavy, heavy
from policy_and_value.models.pi0 import Pi0Policy, make_config
from policy_and_value.envs import make_env
from policy_and_value.models import make_policy
assert "transformers" in sys.modules and callable(make_env) and callable(make_policy)
"""


def test_config_validation_does_not_import_the_model_libraries():
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
