"""Shared test settings: headless MuJoCo, quiet Ray, small thread counts on the 2-core CI machine."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
