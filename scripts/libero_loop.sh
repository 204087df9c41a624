#!/usr/bin/env bash
# The whole loop on LIBERO-Object at a small size, with the commands a user types, timing every stage:
#   collect expert episodes -> progress reward model -> advantage labels -> imitation (tiny pi0)
#   -> its success in LIBERO -> PPO in LIBERO from it -> world model (VAE, denoiser)
#   -> rl_release_libero (imagined envs beside real LIBERO envs, evaluated in LIBERO)
#
#   bash scripts/libero_loop.sh [OUT]        (default OUT: logs/libero_loop; needs make install-libero)
#
# Sizes come from environment variables (defaults: the CPU run of benchmarks/README.md, "LIBERO loop";
# EVAL_EPISODES per task, for every evaluation):
#   EPISODES=10 RM_STEPS=600 IL_STEPS=6000 EVAL_EPISODES=6 PPO_STEPS=4 VAE_STEPS=300 DYN_STEPS=400 RL_STEPS=6
# EPISODES_DIR=DIR reuses episodes collected before (toolkits.collect_episodes) instead of collecting.
# Running it again with the same OUT skips the stages whose outputs exist; STOP_AFTER="STAGE NAME" stops
# after that stage (e.g. STOP_AFTER="PPO in LIBERO"), so the loop can run in parts.
# The configs it runs: configs/env/libero_object_loop.yaml (the three tasks), configs/reward/progress_libero,
# configs/offline/sft_pi0_libero, configs/world_model/ltx_libero, configs/env/world_model_libero and
# configs/rl_release_libero.yaml; with OUT=logs/libero_loop their default paths need no overrides.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/stages.sh"

OUT="${1:-logs/libero_loop}"
EPISODES="${EPISODES:-10}"
RM_STEPS="${RM_STEPS:-600}"
IL_STEPS="${IL_STEPS:-6000}"
EVAL_EPISODES="${EVAL_EPISODES:-6}"
PPO_STEPS="${PPO_STEPS:-4}"
VAE_STEPS="${VAE_STEPS:-300}"
DYN_STEPS="${DYN_STEPS:-400}"
RL_STEPS="${RL_STEPS:-6}"
TASKS=(pick_up_the_alphabet_soup_and_place_it_in_the_basket pick_up_the_bbq_sauce_and_place_it_in_the_basket
  pick_up_the_ketchup_and_place_it_in_the_basket)
mkdir -p "$OUT"
EP="${EPISODES_DIR:-$OUT/episodes}"

once() {  # once OUTPUT NAME COMMAND...: run the stage unless OUTPUT exists; stop after STOP_AFTER
  local out="$1" name="$2"
  shift
  if [ -e "$out" ]; then echo "== $name: $out exists, skipped"; else stage "$@"; fi
  if [ "$name" = "${STOP_AFTER:-}" ]; then print_stages libero_loop; exit 0; fi
}
eval_imitation() {  # the imitation policy's success in LIBERO, kept in OUT/eval_imitation.md
  "$PY" -m policy_and_value.offline.evaluate --model-dir "$OUT/sft/policy" --suite libero_object \
    --tasks "${TASKS[@]}" --episodes "$EVAL_EPISODES" --image-size 64 --num-envs 3 | tee "$OUT/eval_imitation.tmp"
  mv "$OUT/eval_imitation.tmp" "$OUT/eval_imitation.md"
}

if [ -z "${EPISODES_DIR:-}" ]; then
  once "$EP" "collect episodes" "$PY" -m toolkits.collect_episodes --suite libero_object --tasks "${TASKS[@]}" \
    --episodes-per-task "$EPISODES" --num-envs 6 --image-size 64 --action-noise 0.05 --fail-fraction 0.2 \
    --max-episode-steps 220 --seed 7 --out "$EP"
fi
once "$OUT/rm/model" "reward model" "$PY" -m reward_models.train reward/progress_libero data.path="$EP" \
  output_dir="$OUT/rm" train.max_steps="$RM_STEPS"
once "$OUT/episodes_labelled" "advantage labels" "$PY" -m reward_models.label --model-dir "$OUT/rm/model" --data "$EP" \
  --out "$OUT/episodes_labelled"
once "$OUT/sft/policy" "imitation policy" "$PY" -m policy_and_value.offline.train_sft offline/sft_pi0_libero \
  data.path="$OUT/episodes_labelled" output_dir="$OUT/sft" train.max_steps="$IL_STEPS"
once "$OUT/offline_episodes" "offline anchor episodes" "$PY" -m toolkits.episodes.subset --data "$OUT/episodes_labelled" \
  --out "$OUT/offline_episodes" --per-task 3 --failed-per-task 1
once "$OUT/eval_imitation.md" "evaluate imitation" eval_imitation
once "$OUT/ppo/checkpoints/global_step_$PPO_STEPS" "PPO in LIBERO" "$PY" -m policy_and_value.train ppo_pi0_libero \
  env@env.train=libero_object_loop env@env.eval=libero_object_loop rollout.model_dir="$OUT/sft/policy" \
  model.pi0.with_advantage_condition=true model.num_action_chunks=4 algorithm.n_chunk_steps=20 \
  model.pi0.noise_level=0.1 actor.optim.lr=1e-5 actor.optim.value_lr=1e-3 \
  runner.max_steps="$PPO_STEPS" runner.val_check_interval="$PPO_STEPS" runner.save_interval="$PPO_STEPS" \
  env.eval_episodes="$((${#TASKS[@]} * EVAL_EPISODES))" runner.logger.log_path="$OUT" runner.logger.experiment_name=ppo
once "$OUT/wm/model" "world model" "$PY" -m world_models.train world_model/ltx_libero data.path="$EP" output_dir="$OUT/wm" \
  train.vae_steps="$VAE_STEPS" train.dynamics_steps="$DYN_STEPS"
once "$OUT/rl_release_libero/checkpoints/global_step_$RL_STEPS" "rl_release_libero" "$PY" -m policy_and_value.train rl_release_libero \
  rollout.model_dir="$OUT/sft/policy" env.train.dynamics_model_config="$OUT/wm/model" \
  env.train.reward_model_config="$OUT/rm/model" env.train.dynamics_model_image_root="$EP" \
  algorithm.offline_data_path="$OUT/offline_episodes" runner.max_steps="$RL_STEPS" \
  runner.val_check_interval="$RL_STEPS" runner.save_interval="$RL_STEPS" env.eval_episodes="$((${#TASKS[@]} * EVAL_EPISODES))" \
  runner.logger.log_path="$OUT" runner.logger.experiment_name=rl_release_libero

print_stages libero_loop
echo "success in LIBERO: imitation in $OUT/eval_imitation.md; PPO and rl_release_libero before -> after in"
echo "  $OUT/ppo/metrics.jsonl and $OUT/rl_release_libero/metrics.jsonl (eval/success_once)"
