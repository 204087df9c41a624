#!/usr/bin/env bash
# Train one policy on many tasks at once (real, imagined or mixed envs), RLinf's unified multi-task entry:
#   bash scripts/run_embodiment_ray_unified_multi_task.sh [CONFIG] [key=value ...]
# CONFIG (default multitask_mt10) lists the tasks in env.train.tasks; env.train.task_weights gives each task
# its share of the env groups. Training logs env/<task>/* per task, evaluation eval/<task>/* per task, and
# the run ends with a per-task table. Same Ray job as scripts/run_embodiment.sh.
set -euo pipefail
CONFIG=multitask_mt10
if [ $# -gt 0 ] && [[ "$1" != *=* ]] && [[ "$1" != -* ]]; then
  CONFIG="$1"
  shift
fi
exec bash "$(dirname "${BASH_SOURCE[0]}")/run_embodiment.sh" "$CONFIG" "$@"
