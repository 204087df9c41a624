#!/usr/bin/env bash
# Rebuild the quickstart's starting models from scratch and say how long each stage took:
#   collect episodes -> reward model -> advantage labels -> imitation policy (+ its deploy.json, a few of its labelled
#   episodes as the offline anchor) -> world model (VAE, denoiser)
#
#   bash scripts/prepare_quickstart_assets.sh [OUT]        (default OUT: logs/quickstart_assets)
#
# Stage sizes can be shrunk for a smoke run with environment variables (defaults = the shipped recipe):
#   EPISODES=40 RM_STEPS=2000 IL_STEPS=3000 VAE_STEPS=3000 DYN_STEPS=4500
# The world model is the slow stage on a CPU (hours; about 11 minutes on one H100). At the end the script
# prints the overrides that point configs/quickstart.yaml at the rebuilt models.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/stages.sh"

OUT="${1:-logs/quickstart_assets}"
EPISODES="${EPISODES:-40}"
RM_STEPS="${RM_STEPS:-2000}"
IL_STEPS="${IL_STEPS:-3000}"
VAE_STEPS="${VAE_STEPS:-3000}"
DYN_STEPS="${DYN_STEPS:-4500}"
TASKS=(reach-v3 drawer-close-v3 button-press-topdown-v3)
CAMERAS=(corner gripperPOV)
fresh_out "$OUT"

stage "collect episodes" "$PY" -m toolkits.collect_episodes --tasks "${TASKS[@]}" \
  --episodes-per-task "$EPISODES" --fail-fraction 0.3 --action-noise 0.1 --cameras "${CAMERAS[@]}" \
  --seed 7 --num-envs 8 --out "$OUT/episodes"
stage "collect reset episodes" "$PY" -m toolkits.collect_episodes --tasks "${TASKS[@]}" \
  --episodes-per-task 2 --fail-fraction 0 --action-noise 0.1 --cameras "${CAMERAS[@]}" \
  --seed 11 --num-envs 6 --out "$OUT/reset_episodes"
stage "reward model" "$PY" -m reward_models.train reward/progress_tiny data.path="$OUT/episodes" \
  output_dir="$OUT/rm" train.max_steps="$RM_STEPS"
stage "advantage labels" "$PY" -m reward_models.label --model-dir "$OUT/rm/model" --data "$OUT/episodes" \
  --out "$OUT/episodes_labelled"
stage "imitation policy" "$PY" -m policy_and_value.offline.train_sft offline/sft_pi0_tiny \
  data.path="$OUT/episodes_labelled" data.success_only=false model.pi0.with_advantage_condition=true \
  output_dir="$OUT/sft" train.max_steps="$IL_STEPS"
stage "deploy.json" "$PY" -m toolkits.deploy.spec --policy-dir "$OUT/sft/policy" --env metaworld_3tasks
stage "offline anchor episodes" "$PY" -m toolkits.episodes.subset --data "$OUT/episodes_labelled" \
  --out "$OUT/offline_episodes" --per-task 3 --failed-per-task 1
stage "world model: VAE" "$PY" -m world_models.train data.path="$OUT/episodes" output_dir="$OUT/wm_vae" \
  train.vae_steps="$VAE_STEPS" train.dynamics_steps=0 train.batch_size=32
stage "world model: denoiser" "$PY" -m world_models.train data.path="$OUT/episodes" output_dir="$OUT/wm" \
  init_model_dir="$OUT/wm_vae/model" train.vae_steps=0 train.dynamics_steps="$DYN_STEPS"

print_stages prepare_quickstart_assets
echo "run the quickstart on them:"
echo "  bash scripts/run_embodiment.sh quickstart rollout.model_dir=$OUT/sft/policy \\"
echo "    env.train.dynamics_model_config=$OUT/wm/model env.train.reward_model_config=$OUT/rm/model \\"
echo "    env.train.dynamics_model_image_root=$OUT/reset_episodes algorithm.offline_data_path=$OUT/offline_episodes"
