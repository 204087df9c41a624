"""Ranking metrics shared by training reports and benchmarks."""

from __future__ import annotations

import numpy as np


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Probability that a random positive scores above a random negative (ties count half); nan if one
    class is missing. The Mann-Whitney U statistic over the pairs."""
    from scipy.stats import mannwhitneyu

    scores, labels = np.asarray(scores), np.asarray(labels, bool)
    pos, neg = scores[labels], scores[~labels]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    return float(mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)))
