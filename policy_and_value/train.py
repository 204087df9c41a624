"""Command-line entry: ``worldrl train CONFIG [key=value ...]`` (also ``python -m policy_and_value.train`` and
``bash scripts/run_embodiment.sh``). CONFIG is a job of configs/, a research arm of experiments/configs/ or a YAML path.

The config is composed and validated before Ray or any model is imported, so a bad key fails in a
second with one line on stderr and exit code 2. A job that fails later (a worker's error) ends with one
line naming the worker and the cause, exit code 1, the traceback in ``<log_dir>/error.log``. A SIGTERM
(a scheduler's preemption or time limit) stops after the current step with a checkpoint, says how to
resume, exit code 143.
"""

from __future__ import annotations

import sys

USAGE = "usage: worldrl train CONFIG [key=value ...] [--validate-only]   (or: bash scripts/run_embodiment.sh CONFIG ...)"


def main(argv: list[str] | None = None) -> int:
    from policy_and_value.config import load_config
    from toolkits.base.compose import EXPERIMENT_CONFIG_DIR, available_configs
    from toolkits.base.errors import ConfigError

    args = list(sys.argv[1:] if argv is None else argv)
    validate_only = (
        "--validate-only" in args
    )  # check the config and stop (scripts use it before starting Ray)
    args = [a for a in args if a != "--validate-only"]
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        print("\njobs (configs/*.yaml):")
        for name, desc in available_configs().items():
            print(f"  {name:20s} {desc}")
        arms = ", ".join(available_configs(EXPERIMENT_CONFIG_DIR))
        print(f"\nresearch arms (experiments/configs/, reports in experiments/reports/): {arms}")
        print("\noverrides use Hydra syntax: key=value, +new_key=value, ~key; e.g. runner.max_steps=5")
        return 0 if args else 2
    try:
        cfg = load_config(args[0], args[1:])
        if cfg.coevolution.rounds > 0:
            from toolkits.recipes.coevolution_checks import check_coevolution

            check_coevolution(cfg)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    from policy_and_value.config.memory import is_published_size, memory_report

    if is_published_size(cfg):  # published-size presets: what each process will hold, before anything starts
        print(memory_report(cfg), flush=True)
    if validate_only:
        print(
            f"{args[0]}: valid (env.train {cfg.env.train.env_type}, {cfg.runner.max_steps} steps); nothing started"
        )
        return 0
    from policy_and_value.runner import run_job
    from policy_and_value.runner.failure import JobFailed
    from policy_and_value.runner.stop import JobStopped

    try:
        if cfg.coevolution.rounds > 0:
            from toolkits.recipes.coevolution import run_coevolution

            run_coevolution(cfg)
        else:
            run_job(cfg)
    except KeyboardInterrupt:
        return 130
    except JobFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except JobStopped as err:  # SIGTERM: a checkpoint was written; 143 = 128 + SIGTERM, as if killed by it
        print(err, file=sys.stderr)
        return 143
    return 0


if __name__ == "__main__":
    sys.exit(main())
