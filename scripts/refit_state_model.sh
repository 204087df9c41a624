#!/usr/bin/env bash
# Align a state world model with a new starting policy (the data it is trained on should be the policy's own):
#   the policy's rollouts on the training layouts, sampled with RL's exploration noise -> added to the model's
#   own training rollouts -> a warm-started refit of every part (states, success classifier, reward head) and
#   of the renderer (-> optionally longer training of the states) (-> optionally the policy's episodes played in
#   that model's imagination with their actions replayed in Meta-World, added, and a further refit of the states)
#   -> the gauge, on the new policy's rollouts on layouts never trained on, for the model it started from and
#   each one it made.
#
#   bash scripts/refit_state_model.sh POLICY_DIR [OUT]        (default OUT: logs/state_refit)
#
# Environment (defaults = the recipe of assets/world_models/state_outcome20):
# BASE_MODEL=assets/world_models/state_outcome/model BASE_DATA (the base model's training rollouts; empty:
# rebuilt as scripts/prepare_state_outcome.sh collects them, 232 s, which only the default BASE_MODEL allows)
# EXTRA_DATA (episode directories, space-separated, added to the refit's data: e.g. the start's demonstrations,
# data/outcome_start20/demos20, which show the reward head goal states the start rarely reaches) EPISODES=60 (a
# task) NOISE=0.5 STEPS=1000 (training steps of the states and of the renderer) LONG_STEPS=0
# (then this many more steps of the states on the same data, the renderer kept: OUT/long/model) PLANS=0 (a task:
# then the policy plays this many episodes in the last model made, Meta-World replays their actions, and
# PLAN_STEPS=1000 more steps of the states train on the data with them, the renderer kept: OUT/plans/model)
# GAUGE_SEEDS="0 1" GAUGE_STARTS=9 (a task) GAUGE_SAMPLES=4 GAUGE_STEPS=150.
# OUT/model is the refitted model: point env.train.state_model_config at it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/stages.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/outcome_tasks.sh"

POLICY="${1:?usage: bash scripts/refit_state_model.sh POLICY_DIR [OUT]}"
OUT="${2:-logs/state_refit}"
DEFAULT_BASE=assets/world_models/state_outcome/model   # the one whose rollouts this script can rebuild
BASE_MODEL="${BASE_MODEL:-$DEFAULT_BASE}"
BASE_DATA="${BASE_DATA:-}"
read -r -a EXTRA <<< "${EXTRA_DATA:-}"
EPISODES="${EPISODES:-60}"
NOISE="${NOISE:-0.5}"
STEPS="${STEPS:-1000}"
LONG_STEPS="${LONG_STEPS:-0}"
PLANS="${PLANS:-0}"
PLAN_STEPS="${PLAN_STEPS:-1000}"
GAUGE_SEEDS="${GAUGE_SEEDS:-0 1}"
[ -f "$POLICY/config.json" ] || { echo "POLICY_DIR=$POLICY: no config.json; expected a policy directory" >&2; exit 2; }
[ -f "$BASE_MODEL/config.json" ] || { echo "BASE_MODEL=$BASE_MODEL: no config.json; expected a state model" >&2; exit 2; }
for extra in "${EXTRA[@]}"; do
  [ -f "$extra/index.json" ] || { echo "EXTRA_DATA: $extra has no index.json; expected episode directories" >&2; exit 2; }
done
if [ -z "$BASE_DATA" ] && [ "$BASE_MODEL" != "$DEFAULT_BASE" ]; then
  echo "BASE_DATA is empty with BASE_MODEL=$BASE_MODEL: only $DEFAULT_BASE's rollouts can be rebuilt here;" \
    "set BASE_DATA to the episodes $BASE_MODEL was trained on" >&2
  exit 2
fi
fresh_out "$OUT"

if [ -z "$BASE_DATA" ]; then
  BASE_DATA="$OUT/base_rollouts"
  stage "base model's rollouts" policy_rollouts assets/metaworld_outcome/policy "$EPISODES" "$NOISE" "$BASE_DATA"
fi
stage "policy rollouts" policy_rollouts "$POLICY" "$EPISODES" "$NOISE" "$OUT/rollouts"
stage "merge" "$PY" -m toolkits.episodes.merge --data "$BASE_DATA" "$OUT/rollouts" "${EXTRA[@]}" \
  --out "$OUT/data"
stage "refit" "$PY" -m world_models.train_state_model data.path="$OUT/data" output_dir="$OUT" \
  init_model_dir="$BASE_MODEL" train.steps="$STEPS" render.dynamics_model_dir=assets/world_models/tiny_3tasks \
  render.steps="$STEPS"
MODELS=(base "$BASE_MODEL" refit "$OUT/model")
if [ "$LONG_STEPS" -gt 0 ]; then
  stage "longer training" "$PY" -m world_models.train_state_model data.path="$OUT/data" output_dir="$OUT/long" \
    init_model_dir="$OUT/model" train.steps="$LONG_STEPS" render.dynamics_model_dir=null
  MODELS+=(long "$OUT/long/model")
fi
if [ "$PLANS" -gt 0 ]; then
  stage "imagined plans" imagined_plans "$POLICY" "$PLANS" "$NOISE" "${MODELS[-1]}" "$OUT/plan_rollouts"
  stage "merge plans" "$PY" -m toolkits.episodes.merge --data "$OUT/data" "$OUT/plan_rollouts" --out "$OUT/plan_data"
  stage "refit on plans" "$PY" -m world_models.train_state_model data.path="$OUT/plan_data" output_dir="$OUT/plans" \
    init_model_dir="${MODELS[-1]}" train.steps="$PLAN_STEPS" render.dynamics_model_dir=null
  MODELS+=(plans "$OUT/plans/model")
fi
stage "gauge starts" gauge_starts "$OUT/gauge_starts"
for ((i = 0; i < ${#MODELS[@]}; i += 2)); do
  which="${MODELS[i]}" model="${MODELS[i + 1]}"
  for seed in $GAUGE_SEEDS; do
    stage "gauge, $which, seed $seed" outcome_gauge rl_metaworld_dense_wm "$OUT/gauge_starts" --seed "$seed" \
      rollout.model_dir="$POLICY" env.eval.ignore_terminations=true env.train.state_model_config="$model"
  done
done

print_stages refit_state_model
echo "train in it:"
echo "  bash scripts/run_embodiment.sh rl_metaworld_dense_wm_critic rollout.model_dir=$POLICY \\"
echo "    env.train.state_model_config=${MODELS[-1]}"
