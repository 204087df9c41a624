"""A job that fails stops with one line naming the worker and the cause; the full traceback (the driver's
and the worker's) goes to ``<log_dir>/error.log``."""

from __future__ import annotations

import os
import re
import traceback

from toolkits.base.atomic import write_text_atomically

ERROR_LOG = "error.log"


class JobFailed(RuntimeError):
    """A job stopped by an error; the message is one line: which worker, the cause, where the traceback is."""


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def describe_failure(err: BaseException) -> str:
    """``<worker>: <ExceptionType>: <first message line>`` for a Ray worker's error (``env_0:EnvWorker.chunk_step``,
    from the remote task's process title), else ``driver: ...`` for the runner's own."""
    from ray.exceptions import RayActorError, RayTaskError

    if isinstance(err, RayTaskError):
        where = (err.proctitle or err.function_name or "worker").removeprefix("ray::")
        cause = err.cause
        if cause is not None and not isinstance(cause, RayTaskError):
            return f"{where}: {type(cause).__name__}: {_first_line(cause)}".rstrip(": ")
        return f"{where}: {_last_line(str(err))}"
    if isinstance(err, RayActorError):
        text = re.sub(r"\x1b\[[0-9;]*m", "", getattr(err, "error_msg", "") or str(err))
        match = re.search(r"ray::([\w.:-]+)\(\)", text)
        where = match.group(1) if match else "a worker"
        died = "died while starting" if getattr(err, "_actor_init_failed", False) else "died"
        return f"{where} {died}: {_last_line(text)}"
    return f"driver: {type(err).__name__}: {_first_line(err)}".rstrip(": ")


def record_failure(err: BaseException, log_dir: str) -> JobFailed:
    """Write the traceback to ``log_dir/error.log``; the ``JobFailed`` to raise in its place."""
    path = os.path.join(log_dir, ERROR_LOG)
    text = "".join(traceback.format_exception(err))
    try:
        os.makedirs(log_dir, exist_ok=True)
        write_text_atomically(path, text)
        where = f"traceback: {path}"
    except OSError as write_err:  # the log folder itself may be what failed
        where = f"traceback not written ({write_err})"
    return JobFailed(f"job failed in {describe_failure(err)} ({where})")
