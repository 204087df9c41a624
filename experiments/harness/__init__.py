"""The experiment harness: ``python -m experiments.harness.NAME --help``. Each module measures one thing and prints
it; the commands behind every number are in the study reports (experiments/reports)."""
