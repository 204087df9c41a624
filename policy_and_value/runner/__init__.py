"""The training loop (``run_job``), checkpoints and metric logging.

``EmbodiedRunner`` and ``run_job`` are imported on first use, so that tools which only need the
checkpoint or logging helpers (world-model and reward-model training) do not import Ray.
"""

from typing import Any

__all__ = ["EmbodiedRunner", "run_job"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from policy_and_value.runner import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'policy_and_value.runner' has no attribute {name!r}")
