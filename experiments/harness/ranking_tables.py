"""The agreement statistics and tables of ``wm_action_ranking.py``: how imagined scores of candidate actions
[starts, candidates] order them like the real ones (its docstring says what each column means)."""

from __future__ import annotations

from typing import Any

import numpy as np


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (nan, without scipy's warning, when either side is all tied)."""
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def mean_finite(values: list[float]) -> float:
    """Mean of the non-nan values (nan if none)."""
    finite = [v for v in values if not np.isnan(v)]
    return float(np.mean(finite)) if finite else float("nan")


def pair_agreement(imag: np.ndarray, real: np.ndarray, gap: float) -> tuple[float, int]:
    """(agreeing weight, pairs) over the pairs whose real scores differ by more than ``gap``."""
    agree, pairs = 0.0, 0
    for i in range(len(real)):
        for j in range(i + 1, len(real)):
            d_real = real[i] - real[j]
            if abs(d_real) <= gap:
                continue
            pairs += 1
            d_imag = imag[i] - imag[j]
            agree += 0.5 if d_imag == 0 else float(np.sign(d_imag) == np.sign(d_real))
    return agree, pairs


def print_tables(
    k: int, chunk: int, res: dict[str, np.ndarray], names: list[str], gap: float, info: str
) -> None:
    """The scores and the agreement tables of horizon k."""
    tasks = sorted(set(res["task"]))
    print(f"\n=== K = {k} chunk{'s' if k > 1 else ''} ({k * chunk} actions): {info}")
    print(
        f"{'task':<26}{'candidate':<13}{'imag':>7}{'real':>7}"
        f"{'succ end':>10}{'succ any':>10}{'MW reward':>11}"
    )
    for name in [*tasks, "all"]:
        m = np.ones(len(res["task"]), bool) if name == "all" else res["task"] == name
        print(f"{name:<26}{'start frame':<13}{'':>7}{res['start'][m].mean():7.3f}")
        for c, cand in enumerate(names):
            print(f"{'':<26}{cand:<13}{res['imag'][m, c].mean():7.3f}{res['real'][m, c].mean():7.3f}"
                  f"{res['success_end'][m, c].mean():10.2f}{res['success_any'][m, c].mean():10.2f}"
                  f"{res['reward'][m, c].mean():11.2f}")  # fmt: skip
    print(f"\n{'task':<26}{'starts':>7}{'spearman':>10}{'pair acc':>10}{'(pairs)':>9}{'pearson':>9}"
          f"{'within r':>10}{'rm~MW':>8}{'imag~MW':>9}")  # fmt: skip
    for name in [*tasks, "all"]:
        m = np.ones(len(res["task"]), bool) if name == "all" else res["task"] == name
        a = agreement(res["imag"][m], res["real"][m], res["reward"][m], gap)
        print(
            f"{name:<26}{int(m.sum()):>7}{a['spearman']:10.3f}{a['pair acc']:10.3f}{a['pairs']:>9}"
            f"{a['pearson']:9.3f}{a['within r']:10.3f}{a['rm~MW']:8.3f}{a['imag~MW']:9.3f}"
        )
    samples = [c for c, cand in enumerate(names) if cand.startswith("sample ")]
    if len(samples) < 2:
        return
    print(f"\namong the {len(samples)} policy samples only (a GRPO group in imagination); spread: std of the "
          f"scores within a start, averaged")  # fmt: skip
    print(f"{'task':<26}{'starts':>7}{'spearman':>10}{'pair acc':>10}{'(pairs)':>9}{'within r':>10}"
          f"{'imag spread':>13}{'real spread':>13}{'succ spread':>13}{'rm~MW':>8}{'imag~MW':>9}"
          f"{'pick imag':>11}{'pick best':>11}")  # fmt: skip
    for name in [*tasks, "all"]:
        m = np.ones(len(res["task"]), bool) if name == "all" else res["task"] == name
        imag, real = res["imag"][m][:, samples], res["real"][m][:, samples]
        a = agreement(imag, real, res["reward"][m][:, samples], gap)
        succ = res["success_any"][m][:, samples].astype(float)
        picked = real[np.arange(len(real)), imag.argmax(1)] - real.mean(1)
        print(
            f"{name:<26}{int(m.sum()):>7}{a['spearman']:10.3f}{a['pair acc']:10.3f}{a['pairs']:>9}"
            f"{a['within r']:10.3f}{imag.std(1).mean():13.4f}{real.std(1).mean():13.4f}{succ.std(1).mean():13.3f}"
            f"{a['rm~MW']:8.3f}{a['imag~MW']:9.3f}{picked.mean():11.4f}{(real.max(1) - real.mean(1)).mean():11.4f}"
        )


def agreement(imag: np.ndarray, real: np.ndarray, reward: np.ndarray, gap: float) -> dict[str, Any]:
    """How imagined scores [starts, candidates] agree with real ones (see the module docstring)."""
    agree = [pair_agreement(a, b, gap) for a, b in zip(imag, real, strict=True)]
    pairs = sum(p for _, p in agree)
    centred = [(x - x.mean(1, keepdims=True)).ravel() for x in (imag, real)]
    return {
        "spearman": mean_finite([spearman(a, b) for a, b in zip(imag, real, strict=True)]),
        "pair acc": sum(a for a, _ in agree) / pairs if pairs else float("nan"),
        "pairs": pairs,
        "pearson": np.corrcoef(imag.ravel(), real.ravel())[0, 1],
        "within r": np.corrcoef(*centred)[0, 1],
        "rm~MW": mean_finite([spearman(a, b) for a, b in zip(real, reward, strict=True)]),
        "imag~MW": mean_finite([spearman(a, b) for a, b in zip(imag, reward, strict=True)]),
    }
