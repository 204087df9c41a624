"""The training loop (``run_job``), checkpoints and metric logging."""

from policy_and_value.runner.runner import EmbodiedRunner, run_job

__all__ = ["EmbodiedRunner", "run_job"]
