"""What a run reports about itself: where its outputs are, the end-of-run success tables, the progress
bar's numbers, and the union of busy intervals that the compute-share metrics are made of."""

from __future__ import annotations

import os

TRAIN_SUMMARY_STEPS = 5


def output_paths(log_dir: str, last_checkpoint: str | None, wm_pred_dir: str) -> list[str]:
    """Where a run left its logs, tensorboard events, metrics, last checkpoint and videos (with how many), so
    the end-of-run report says where to look next."""
    lines = [
        f"  logs:        {log_dir}",
        f"  tensorboard: tensorboard --logdir {os.path.join(log_dir, 'tensorboard')}",
        f"  metrics:     {os.path.join(log_dir, 'metrics.jsonl')}",
    ]
    if last_checkpoint:
        lines.append(f"  checkpoint:  {last_checkpoint}")
    for label, path in (("videos:", os.path.join(log_dir, "videos")), ("wm videos:", wm_pred_dir)):
        if os.path.isdir(path):
            count = sum(name.endswith(".mp4") for _, _, names in os.walk(path) for name in names)
            lines.append(f"  {label:12s} {path} ({count} mp4)")
    return lines


def train_summary(recent: list[dict[str, float]]) -> list[str]:
    """Per-task training success over the last steps (a multi-task run's end-of-run table), averaged over
    the steps in which the task finished episodes; nothing for a single-task run."""
    keys = sorted({k for m in recent for k in m if k.startswith("env/") and k.count("/") == 2})
    keys = [k for k in keys if k.endswith("/success_once")]
    if len(keys) < 2:
        return []
    lines = [f"  training success per task (and env group), mean of the last {len(recent)} steps"]
    for k in keys:
        values = [m[k] for m in recent if k in m]
        lines.append(
            f"    {k.removeprefix('env/').removesuffix('/success_once'):28s} {sum(values) / len(values):6.3f}"
        )
    return lines


def eval_summary(first: dict[str, float], last: dict[str, float], where: str = "the real env") -> list[str]:
    """Summary lines of eval success (and return) in ``where`` before training and after the last evaluation;
    with one of the two missing, the one that ran and why the other did not."""
    keys = sorted(k for k in {*first, *last} if k.endswith("/success_once"))
    keys += [k for k in ("eval/return",) if k in first or k in last]
    if not keys:
        return []
    names = {k: k.removeprefix("eval/") for k in keys}
    width = max(28, *(len(n) + 1 for n in names.values()))
    if first and last:
        lines = [f"  {'eval in ' + where:{width + 2}s}before -> after"]
        return lines + [
            f"    {names[k]:{width}s} {first.get(k, float('nan')):6.3f} -> {last.get(k, float('nan')):6.3f}"
            for k in keys
        ]
    which = "before training (no evaluation ran after it)" if first else "after training"
    return [f"  eval in {where}, {which}"] + [
        f"    {names[k]:{width}s} {(first or last)[k]:6.3f}" for k in keys if k in (first or last)
    ]


def interval_union(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """Total length of the union of intervals, clipped to [start, end]."""
    total, cur_a, cur_b = 0.0, None, None
    for a, b in sorted((max(a, start), min(b, end)) for a, b in intervals):
        if b <= a:
            continue
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total


def progress_postfix(metrics: dict[str, float]) -> dict[str, str]:
    """The few numbers the progress bar shows after each step."""
    keys = ("env/return", "env/success_once", "eval/return", "eval/success_once", "time/step")
    return {k.split("/", 1)[1]: f"{metrics[k]:.3g}" for k in keys if k in metrics}
