#!/usr/bin/env bash
# Rebuild the state world model of configs/rl_metaworld_outcome_wm.yaml (shipped in
# assets/world_models/state_outcome): the starting policy's own rollouts -> state model + renderer ->
# reward head -> everything trained on together, longer -> start frames on the training layouts -> the gauge
# on layouts never trained on.
#
#   bash scripts/prepare_state_outcome.sh [OUT]        (default OUT: logs/state_outcome)
#
# Sizes by environment variables (defaults = the shipped recipe): EPISODES=60 STATE_STEPS=1500
# RENDER_STEPS=6000 HEAD_STEPS=3500 LONG_STEPS=2000 STARTS=16 GAUGE_STARTS=9 (a task) GAUGE_SAMPLES=4
# GAUGE_STEPS=150. OUT/train/model is the shipped state_outcome/model, OUT/long/model state_outcome/model_long
# (in the history: git checkout 2a4317f -- assets/world_models/state_outcome/model_long); OUT/rollouts is what
# coevolution.state_model_data takes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/stages.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/outcome_tasks.sh"

OUT="${1:-logs/state_outcome}"
EPISODES="${EPISODES:-60}"
STATE_STEPS="${STATE_STEPS:-1500}"
RENDER_STEPS="${RENDER_STEPS:-6000}"
HEAD_STEPS="${HEAD_STEPS:-3500}"
LONG_STEPS="${LONG_STEPS:-2000}"
STARTS="${STARTS:-16}"
fresh_out "$OUT"

# the policy rl_metaworld_outcome_wm starts from, sampled with its exploration noise, on training layouts
stage "policy rollouts" policy_rollouts assets/metaworld_outcome/policy "$EPISODES" 0.5 "$OUT/rollouts"
stage "state model" "$PY" -m world_models.train_state_model data.path="$OUT/rollouts" output_dir="$OUT/states" \
  train.steps="$STATE_STEPS" render.dynamics_model_dir=assets/world_models/tiny_3tasks render.steps="$RENDER_STEPS" \
  model.reward_head=false
# the reward head (rl_metaworld_dense_wm's shaped reward) on top, every other weight kept
stage "reward head" "$PY" -m world_models.train_state_model data.path="$OUT/rollouts" output_dir="$OUT/train" \
  init_model_dir="$OUT/states/model" train.parts=reward_head train.steps="$HEAD_STEPS"
# then states, success classifier, reward head and renderer together, warm-started: the gauge's bars need it
stage "longer training" "$PY" -m world_models.train_state_model data.path="$OUT/rollouts" output_dir="$OUT/long" \
  init_model_dir="$OUT/train/model" train.steps="$LONG_STEPS" render.dynamics_model_dir=assets/world_models/tiny_3tasks \
  render.steps="$LONG_STEPS"
stage "start frames" "$PY" -m toolkits.collect_episodes --tasks "${TASKS[@]}" --episodes-per-task "$STARTS" \
  --max-episode-steps 4 --cameras "${CAMERAS[@]}" --seed 11 --num-envs 12 --layout-seed 0 --out "$OUT/starts"
stage "gauge starts" gauge_starts "$OUT/gauge_starts"
stage "gauge" outcome_gauge rl_metaworld_outcome_wm "$OUT/gauge_starts" \
  env.train.state_model_config="$OUT/train/model" env.train.dynamics_model_image_root="$OUT/starts"
# the longer-trained model on the same starts with the shaped reward, whole 150-step episodes (rl_metaworld_dense_wm)
stage "dense gauge" outcome_gauge rl_metaworld_dense_wm "$OUT/gauge_starts" \
  env.eval.ignore_terminations=true env.train.state_model_config="$OUT/long/model" \
  env.train.dynamics_model_image_root="$OUT/starts"

print_stages prepare_state_outcome
echo "train with it:"
echo "  bash scripts/run_embodiment.sh rl_metaworld_outcome_wm env.train.state_model_config=$OUT/train/model \\"
echo "    env.train.dynamics_model_image_root=$OUT/starts"
