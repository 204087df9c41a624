"""Ray workers: env (simulators or world model), rollout (policy inference), actor (training)."""
