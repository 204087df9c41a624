"""The improver's training steps (imitation, the world model's refit) as Ray tasks, so that a round trains where the
cluster has room (a GPU node: ``train_resources.num_gpus=1``) while the improver itself only watches and gates.

A step that finds Ray running (``RAY_ADDRESS``, or a Ray this process started) uses it and leaves it running, as a
job does; otherwise it starts a local Ray sized to this machine and stops it when the step ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


@contextmanager
def ray_session() -> Iterator[None]:
    """Ray for the ``with`` block: the running one, left running; else a local one, stopped at the block's end (a round
    that trains and then runs a job starts Ray once)."""
    import ray

    from policy_and_value.runtime.cluster import init_ray

    started = not ray.is_initialized()
    if started:
        init_ray()
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def run_on_ray(fn: Callable[..., T], *args: Any, num_cpus: int | None = None, num_gpus: float = 0.0) -> T:
    """``fn(*args)`` in a Ray task holding ``num_cpus`` (None: every CPU of the cluster) and ``num_gpus``, in
    ``ray_session``; its result. An exception in the task is raised here as the task's own exception type."""
    import ray

    with ray_session():
        cpus = num_cpus or max(1, int(ray.cluster_resources().get("CPU", 1)))
        task = ray.remote(num_cpus=cpus, num_gpus=num_gpus, max_retries=0)(fn)
        try:
            return ray.get(task.remote(*args))
        except ray.exceptions.RayTaskError as err:
            raise err.as_instanceof_cause() from None
