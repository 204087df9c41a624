"""The improver's training steps run as Ray tasks: in another process, errors keep their type, Ray left as found."""

import os

import pytest
import ray

from toolkits.online.ray_tasks import run_on_ray


def _pid() -> int:
    return os.getpid()


def _fail(message: str) -> None:
    raise ValueError(message)


@pytest.mark.slow
def test_a_step_runs_in_a_ray_worker_raises_its_own_error_and_stops_the_ray_it_started():
    if ray.is_initialized():
        ray.shutdown()
    assert run_on_ray(_pid, num_cpus=1) != os.getpid()
    assert not ray.is_initialized()  # started for the step, stopped after it
    with pytest.raises(ValueError, match="no episodes"):
        run_on_ray(_fail, "no episodes")
    assert not ray.is_initialized()
