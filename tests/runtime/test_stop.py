"""SIGTERM handling: the first signal only asks the loop to stop; a second one, or leaving the block, does not
leave the job unkillable; the command line says where to resume and exits 143."""

import os
import signal

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


def test_train_command_reports_where_to_resume(monkeypatch, capsys):
    from policy_and_value import train

    def stopped(cfg):
        raise JobStopped("SIGTERM", 7, "/runs/x/checkpoints/global_step_7")

    monkeypatch.setattr("policy_and_value.runner.runner.run_job", stopped)
    assert train.main(["ppo_gym_cartpole"]) == 143
    err = capsys.readouterr().err.strip()
    assert (
        err
        == "stopped by SIGTERM after step 7: continue with runner.resume_dir=/runs/x/checkpoints/global_step_7"
    )
