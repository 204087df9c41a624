# The tasks and cameras of the outcome recipes (rl_metaworld_outcome*, rl_metaworld_dense*) and the
# collections their build scripts share, so that a rebuilt model sees the same data as the shipped one.
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/outcome_tasks.sh"    (after lib/stages.sh: it uses $PY)
TASKS=(reach-v3 button-press-topdown-v3 door-open-v3)
CAMERAS=(corner gripperPOV)

policy_rollouts() {  # policy_rollouts POLICY EPISODES NOISE OUT: a policy's sampled rollouts, training layouts
  "$PY" -m toolkits.collect_episodes --tasks "${TASKS[@]}" --episodes-per-task "$2" --cameras "${CAMERAS[@]}" \
    --seed 5 --num-envs 12 --policy-dir "$1" --noise-level "$3" --out "$4"
}

gauge_starts() {  # gauge_starts N OUT: N start frames a task on layouts never trained on (the gauge's starts)
  "$PY" -m toolkits.collect_episodes --tasks "${TASKS[@]}" --episodes-per-task "$1" --max-episode-steps 4 \
    --cameras "${CAMERAS[@]}" --seed 21 --num-envs "$1" --layout-seed 1 --out "$2"
}
