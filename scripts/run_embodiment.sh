#!/usr/bin/env bash
# Run one worldrl job: bash scripts/run_embodiment.sh CONFIG [key=value ...]   (--help lists configs)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$REPO/.venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"
export MUJOCO_GL="${MUJOCO_GL:-egl}"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m policy_and_value.train "$@"
