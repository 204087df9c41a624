"""SIGTERM handling: the first signal only asks the loop to stop; a second one, or leaving the block, does not
leave the job unkillable; the command line says where to resume and exits 143."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from policy_and_value.runner.stop import JobStopped, stop_on_sigterm


def test_first_sigterm_requests_a_stop_and_the_second_interrupts():
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_sigterm() as stop:
        assert not stop.requested
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested and stop.signal_name == "SIGTERM"
        signal.signal(signal.SIGTERM, lambda *_: None)  # what ray.init does when a round's job starts
        with stop_on_sigterm() as inner:  # co-evolution's rounds and the job inside share one request
            assert inner is stop and signal.getsignal(signal.SIGTERM) == stop.handle
        assert signal.getsignal(signal.SIGTERM) == stop.handle
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.slow
def test_a_sigterm_after_ray_stopped_still_only_requests_a_stop():
    """``ray.shutdown`` resets SIGTERM to "terminate" underneath Python; ``Cluster.shutdown`` installs the handler
    again, so a co-evolution signalled between its rounds' jobs (while it rolls out or refits) stops after the
    round. In a child process, which the regression would kill (exit -15)."""
    script = textwrap.dedent("""
        import os, signal
        from policy_and_value.config.schema import ClusterConfig
        from policy_and_value.runner.stop import reclaim_sigterm, stop_on_sigterm
        from policy_and_value.runtime.cluster import Cluster
        with stop_on_sigterm() as stop:
            cluster = Cluster.start(ClusterConfig())
            reclaim_sigterm()  # as the runner's setup does
            cluster.shutdown()
            os.kill(os.getpid(), signal.SIGTERM)
            print("stop requested:", stop.requested)
        cluster = Cluster.start(ClusterConfig())  # no handler of ours: ray's goes with Ray, a SIGTERM terminates
        cluster.shutdown()
        print("handler after Ray:", signal.getsignal(signal.SIGTERM))
    """)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stop requested: True" in done.stdout
    assert f"handler after Ray: {signal.SIG_DFL}" in done.stdout


def test_train_command_reports_where_to_resume(monkeypatch, capsys):
    from policy_and_value import train

    def stopped(cfg):
        raise JobStopped("SIGTERM", 7, "/runs/x/checkpoints/global_step_7")

    monkeypatch.setattr("policy_and_value.runner.runner.run_job", stopped)
    assert train.main(["ppo_mlp_cartpole"]) == 143
    err = capsys.readouterr().err.strip()
    assert (
        err
        == "stopped by SIGTERM after step 7: continue with runner.resume_dir=/runs/x/checkpoints/global_step_7"
    )
