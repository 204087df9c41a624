"""The RL job: its typed config and validation, the Ray runtime and workers, the training loop, the env and policy
contracts with their simulators and pi0 models, the algorithms, the offline imitation and evaluation, and the job's
entry point (``policy_and_value.train``)."""
