#!/usr/bin/env bash
# Train one policy on many tasks at once (real, imagined or mixed envs), RLinf's unified multi-task entry,
# on this machine or on a Ray cluster of several.
#
#   bash scripts/run_embodiment_ray_unified_multi_task.sh [CONFIG] [key=value ...]       # this machine
#   bash scripts/run_embodiment_ray_unified_multi_task.sh --head [--port 6379] [RAY OPTIONS] [CONFIG] \
#       cluster.num_nodes=N [key=value ...]      # head: starts Ray here, waits for N nodes, runs the job
#   bash scripts/run_embodiment_ray_unified_multi_task.sh --address HEAD_IP:PORT [RAY OPTIONS]
#                                                # every other machine: joins the cluster until Ctrl-C
#
# RAY OPTIONS (passed to `ray start`): --num-cpus N, --num-gpus N, --resources JSON.
# CONFIG (default ppo_pi0_mt10) lists the tasks in env.train.tasks; env.train.task_weights gives each
# task its share of the env groups. Training logs env/<task>/* per task, evaluation eval/<task>/* per task,
# and the run ends with a per-task table. Placement node i is the i-th machine to join (the head is 0);
# the run writes where every rank ran to <log dir>/placement.json. The head waits for the nodes up to
# cluster.node_timeout_s (300 s). Ray's token authentication stays on: the other machines need the head's
# token (copy ~/.ray/auth_token, or export RAY_AUTH_TOKEN). The head's Ray stops when the job ends.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RAY="$REPO/.venv/bin/ray"
[ -x "$RAY" ] || RAY="$(command -v ray)"
PY="$REPO/.venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"
export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"

MODE=local
PORT=6379
ADDRESS=""
RAY_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --head) MODE=head; shift ;;
    --address) MODE=join; ADDRESS="${2:?--address needs HOST:PORT}"; shift 2 ;;
    --port) PORT="${2:?--port needs a number}"; shift 2 ;;
    --num-cpus|--num-gpus|--resources) RAY_ARGS+=("$1=${2:?$1 needs a value}"); shift 2 ;;
    -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*) echo "error: unknown option $1 (allowed: --head, --address, --port, --num-cpus, --num-gpus, --resources)" >&2; exit 2 ;;
    *) break ;;
  esac
done

if [ "$MODE" = join ]; then
  if [ $# -gt 0 ]; then
    echo "error: --address joins this machine as a node and runs no job; run '$*' on the head (--head)" >&2
    exit 2
  fi
  echo "joining the Ray cluster at $ADDRESS (Ctrl-C leaves it)"
  exec "$RAY" start --address="$ADDRESS" --disable-usage-stats --block "${RAY_ARGS[@]}"
fi

CONFIG=ppo_pi0_mt10
if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then
  CONFIG="$1"
  shift
fi
if [ "$MODE" = local ]; then
  if [ ${#RAY_ARGS[@]} -gt 0 ]; then
    echo "error: ${RAY_ARGS[0]%%=*} is a Ray node option: use it with --head or --address" >&2
    exit 2
  fi
  exec bash "$REPO/scripts/run_embodiment.sh" "$CONFIG" "$@"
fi

# --head: validate first (no Ray started for a bad config), then start the head and run the job on it
RAY_ADDRESS=pending "$PY" -m policy_and_value.train "$CONFIG" "$@" --validate-only
IP="$("$PY" -c 'import ray.util; print(ray.util.get_node_ip_address())')"
HEAD_LOG="$(mktemp -t worldrl_ray_head.XXXXXX.log)"
"$RAY" start --head --port="$PORT" --include-dashboard=false --disable-usage-stats --block "${RAY_ARGS[@]}" \
  >"$HEAD_LOG" 2>&1 &
HEAD_PID=$!
stop_head() {
  kill -TERM "$HEAD_PID" 2>/dev/null || true
  wait "$HEAD_PID" 2>/dev/null || true
  # `ray start` records the cluster for later `ray.init()` calls; forget it once it is gone
  if [ "$(cat /tmp/ray/ray_current_cluster 2>/dev/null)" = "$IP:$PORT" ]; then rm -f /tmp/ray/ray_current_cluster; fi
}
trap stop_head EXIT
for _ in $(seq 60); do
  if "$RAY" health-check --address="$IP:$PORT" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$HEAD_PID" 2>/dev/null; then
    echo "error: the Ray head did not start on port $PORT (log: $HEAD_LOG): $(grep -a -m1 -i error "$HEAD_LOG" || true)" >&2
    exit 1
  fi
  sleep 1
done
echo "Ray head at $IP:$PORT; on every other machine: bash scripts/run_embodiment_ray_unified_multi_task.sh --address $IP:$PORT"
export RAY_ADDRESS="$IP:$PORT"
export MUJOCO_GL="${MUJOCO_GL:-egl}"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -m policy_and_value.train "$CONFIG" "$@"
