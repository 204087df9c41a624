# Shared by the asset-building scripts: the repo's venv, a fresh output folder, and timed stages.
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/stages.sh"; fresh_out "$OUT"; stage NAME CMD...; print_stages NAME
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
PY="$REPO/.venv/bin/python"
[ -x "$PY" ] || { echo "no .venv here: run 'make install' first" >&2; exit 2; }
export MUJOCO_GL="${MUJOCO_GL:-egl}"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"

fresh_out() {  # fresh_out DIR: refuse to overwrite an earlier build
  if [ -e "$1" ]; then echo "OUT=$1 exists; choose a new directory" >&2; exit 2; fi
  mkdir -p "$1"
}

declare -a STAGES=()
START=$(date +%s)
stage() {  # stage NAME COMMAND...: run it, record its wall time
  local name="$1" t0
  shift
  echo "== $name"
  t0=$(date +%s)
  "$@"
  STAGES+=("$(printf '%-22s %6d s' "$name" $(( $(date +%s) - t0 )))")
}

print_stages() {  # print_stages SCRIPT: the total and every stage's wall time
  echo
  echo "$1: done in $(( $(date +%s) - START )) s"
  printf '  %s\n' "${STAGES[@]}"
}
