"""Success against real env steps, one line per arm, as a PNG: how many real interactions each arm needed.

    .venv/bin/python -m experiments.harness.plot_real_steps --start logs/outcome_wm/imitation_seed0 \\
        --runs "co-evolution=logs/coevolution/wm_seed0" "Meta-World PPO=logs/outcome_gain_ppo/wm_seed0" \\
        --out experiments/figures/coevolution_real_steps.png [--log-x]

Each run directory holds an ``imagination_gain.py`` ``result.json``: its evaluations (``curve``, per saved
step) and the real env steps used up to each (``real_env_steps_at``; older records: the final success at
``real_env_steps``). ``--start`` is the imitation record every line starts from (0 real steps). Success is
the mean over tasks. A comma-separated list of directories (one per seed, in ``--start`` and ``--runs``)
draws their mean, point by point: real steps and success averaged over seeds. ``--log-x`` spaces the
x axis by log10(1 + steps), so a few thousand steps and a few hundred thousand both show. Drawn with
Pillow (no plotting library needed); prints the points it drew.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

COLOURS = [  # matplotlib's tab10
    (31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189), (255, 127, 14),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
]  # fmt: skip


def points(run_dir: str) -> list[tuple[int, float]]:
    """(real env steps, mean success) of every evaluation of the run, in step order."""
    with open(os.path.join(run_dir, "result.json")) as f:
        record = json.load(f)
    at = record.get("real_env_steps_at")
    if at and record.get("curve"):
        steps = sorted(record["curve"], key=int)
        return [(int(at[s]), float(np.mean(list(record["curve"][s].values())))) for s in steps]
    return [(int(record["real_env_steps"]), float(np.mean(list(record["success"].values()))))]


def mean_points(run_dirs: list[str]) -> list[tuple[float, float]]:
    """The runs' points averaged over runs (seeds), point by point; every run must have as many points."""
    runs = [points(d) for d in run_dirs]
    if len({len(r) for r in runs}) > 1:
        counts = ", ".join(f"{d}: {len(r)}" for d, r in zip(run_dirs, runs))
        raise SystemExit(f"--runs: seeds of one arm need as many evaluations each, got {counts}")
    return [(float(np.mean(xs)), float(np.mean(ys))) for xs, ys in (zip(*p) for p in zip(*runs))]


def draw(
    lines: dict[str, list[tuple[float, float]]],
    out: str,
    log_x: bool = False,
    size: tuple[int, int] = (900, 560),
) -> None:
    """A line chart: real env steps (x, from 0; log10(1 + steps) with ``log_x``) against success in % (y),
    with a legend."""
    from PIL import Image, ImageDraw

    w, h = size
    left, right, top, bottom = 80, 30, 30, 70
    img = Image.new("RGB", size, "white")
    pen = ImageDraw.Draw(img)
    scale = (lambda x: float(np.log10(1.0 + x))) if log_x else (lambda x: float(x))
    x_max = scale(max(x for pts in lines.values() for x, _ in pts)) * 1.05 or 1.0
    y_values = [y for pts in lines.values() for _, y in pts]
    y_lo, y_hi = max(0.0, min(y_values) - 0.05), min(1.0, max(y_values) + 0.05)

    def xy(x: float, y: float) -> tuple[float, float]:
        return (
            left + scale(x) / x_max * (w - left - right),
            top + (y_hi - y) / (y_hi - y_lo) * (h - top - bottom),
        )

    pen.rectangle([left, top, w - right, h - bottom], outline="black")
    ticks = (
        [0, *(10**k for k in range(1, int(x_max) + 1) if scale(10**k) <= x_max)]
        if log_x
        else [x_max * i / 5 for i in range(6)]
    )
    for x in ticks:
        px, _ = xy(x, y_lo)
        pen.line([px, h - bottom, px, h - bottom + 5], fill="black")
        pen.text(
            (px - 20, h - bottom + 8),
            f"{x / 1000:.0f}k" if x >= 1000 or not log_x else f"{x:.0f}",
            fill="black",
        )
    for i in range(6):
        y = y_lo + (y_hi - y_lo) * i / 5
        _, py = xy(0, y)
        pen.line([left - 5, py, left, py], fill="black")
        pen.text((left - 45, py - 6), f"{100 * y:.0f}%", fill="black")
    pen.text((w // 2 - 60, h - 30), "real env steps (log scale)" if log_x else "real env steps", fill="black")
    pen.text((10, top - 20), "success (mean over tasks, layouts never trained on)", fill="black")
    for k, (label, pts) in enumerate(lines.items()):
        colour = COLOURS[k % len(COLOURS)]
        coords = [xy(x, y) for x, y in pts]
        if len(coords) > 1:
            pen.line(coords, fill=colour, width=3)
        for cx, cy in coords:
            pen.ellipse([cx - 4, cy - 4, cx + 4, cy + 4], fill=colour)
        pen.text((left + 15, top + 10 + 16 * k), f"- {label}", fill=colour)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    img.save(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--start", required=True, help="the imitation run directory (0 real steps); DIR,DIR: mean")
    p.add_argument(
        "--runs", nargs="+", required=True, help="LABEL=RUN_DIR or LABEL=DIR,DIR,... (mean of seeds)"
    )
    p.add_argument("--out", required=True, help="the PNG to write")
    p.add_argument("--log-x", action="store_true", help="x spaced by log10(1 + real env steps)")
    args = p.parse_args()
    start = []
    for run_dir in args.start.split(","):
        with open(os.path.join(run_dir, "result.json")) as f:
            start.append(float(np.mean(list(json.load(f)["success"].values()))))
    origin = [(0.0, float(np.mean(start)))]
    lines = {}
    for item in args.runs:
        label, _, run_dirs = item.partition("=")
        if not run_dirs:
            raise SystemExit(f"--runs {item!r}: expected LABEL=RUN_DIR or LABEL=DIR,DIR,...")
        lines[label] = origin + mean_points(run_dirs.split(","))
    draw(lines, args.out, log_x=args.log_x)
    for label, pts in lines.items():
        print(f"{label}: " + ", ".join(f"{x:.0f} steps -> {100 * y:.1f}%" for x, y in pts))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
