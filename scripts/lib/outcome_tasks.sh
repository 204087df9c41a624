# The tasks and cameras of the outcome recipes (rl_metaworld_outcome*, rl_metaworld_dense*) and the
# collections their build scripts share, so that a rebuilt model sees the same data as the shipped one.
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/outcome_tasks.sh"    (after lib/stages.sh: it uses $PY)
TASKS=(reach-v3 button-press-topdown-v3 door-open-v3)
CAMERAS=(corner gripperPOV)
GAUGE_STARTS="${GAUGE_STARTS:-9}"    # the gauge's sizes: starts a task, policy samples a start, actions an episode
GAUGE_SAMPLES="${GAUGE_SAMPLES:-4}"
GAUGE_STEPS="${GAUGE_STEPS:-150}"

policy_rollouts() {  # policy_rollouts POLICY EPISODES NOISE OUT: a policy's sampled rollouts, training layouts
  # (ROLLOUT_STEPS, if set: episodes of that many steps instead of Meta-World's 150; tests shrink with it)
  "$PY" -m toolkits.collect_episodes --tasks "${TASKS[@]}" --episodes-per-task "$2" --cameras "${CAMERAS[@]}" \
    --seed 5 --num-envs 12 --policy-dir "$1" --noise-level "$3" --out "$4" \
    ${ROLLOUT_STEPS:+--max-episode-steps "$ROLLOUT_STEPS"}
}

imagined_plans() {  # imagined_plans POLICY EPISODES NOISE STATE_MODEL OUT: the policy's sampled episodes played in
  # STATE_MODEL's imagination (rl_metaworld_dense_wm's world-model env) from Meta-World starts on the training
  # layouts, their actions replayed there: what the actions imagination chose really do
  "$PY" -m toolkits.collect_episodes --tasks "${TASKS[@]}" --episodes-per-task "$2" --cameras "${CAMERAS[@]}" \
    --seed 6 --num-envs 12 --policy-dir "$1" --noise-level "$3" --out "$5" \
    --imagine rl_metaworld_dense_wm env.train.state_model_config="$4"
}

gauge_starts() {  # gauge_starts OUT: GAUGE_STARTS start frames a task on layouts never trained on (the gauge's)
  "$PY" -m toolkits.collect_episodes --tasks "${TASKS[@]}" --episodes-per-task "$GAUGE_STARTS" --max-episode-steps 4 \
    --cameras "${CAMERAS[@]}" --seed 21 --num-envs "$GAUGE_STARTS" --layout-seed 1 --out "$1"
}

outcome_gauge() {  # outcome_gauge CONFIG STARTS [ARG...]: benchmarks/wm_outcome_gauge.py on STARTS, GAUGE_* sized
  local config="$1" starts="$2"
  shift 2
  "$PY" benchmarks/wm_outcome_gauge.py --config "$config" --starts "$starts" --starts-per-task "$GAUGE_STARTS" \
    --samples "$GAUGE_SAMPLES" --episode-steps "$GAUGE_STEPS" "$@"
}
