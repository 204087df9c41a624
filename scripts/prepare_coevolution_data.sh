#!/usr/bin/env bash
# Rebuild the episodes assets/world_models/state_outcome20_both was trained on, which co-evolution refits it on
# (coevolution.state_model_data of configs/rl_metaworld_coevolution_critic_20demo.yaml):
#   the rollouts of the three policies its line of refits saw, each on the training layouts, sampled with RL's
#   exploration noise: the 2-demonstration start's (state_outcome's data), the start that aims' (added for
#   state_outcome20), the start on both kinds of frame's (added for state_outcome20_both) -> merged (540 episodes)
#   into OUT/data, what coevolution.state_model_data takes.
#
#   bash scripts/prepare_coevolution_data.sh [OUT]        (default OUT: data/coevolution20_both)
#
# Environment (defaults = the recipe of the shipped models): EPISODES=60 (a task, a policy) NOISE=0.5
# ROLLOUT_STEPS (an episode's steps; empty: Meta-World's 150). Its three collections took 20 minutes here run at once
# on a 2-core CPU (beside a 2-minute build of a start's anchor).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/stages.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/outcome_tasks.sh"

OUT="${1:-data/coevolution20_both}"
EPISODES="${EPISODES:-60}"
NOISE="${NOISE:-0.5}"
fresh_out "$OUT"

stage "2-demo start's rollouts" policy_rollouts assets/metaworld_outcome/policy "$EPISODES" "$NOISE" "$OUT/outcome"
stage "aiming start's rollouts" policy_rollouts assets/metaworld_outcome20/policy "$EPISODES" "$NOISE" "$OUT/outcome20"
stage "both-frames rollouts" policy_rollouts assets/metaworld_outcome20_both/policy "$EPISODES" "$NOISE" \
  "$OUT/outcome20_both"
stage "merge" "$PY" -m toolkits.episodes.merge --data "$OUT/outcome" "$OUT/outcome20" "$OUT/outcome20_both" \
  --out "$OUT/data"

print_stages prepare_coevolution_data
echo "co-evolve on them: bash scripts/run_embodiment.sh rl_metaworld_coevolution_critic_20demo \\"
echo "    coevolution.state_model_data=$OUT/data"
