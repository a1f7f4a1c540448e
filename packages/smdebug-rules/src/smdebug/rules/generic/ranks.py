"""Rank statistics of the leak tests: average ranks with ties, Spearman's rank correlation."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """The 1-based rank of each value, ties sharing the mean of their ranks."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return (ends - (counts - 1) / 2.0)[inverse.reshape(-1)]


def rank_correlation(a: np.ndarray, b: np.ndarray) -> Optional[float]:
    """Spearman's rank correlation of ``a`` and ``b`` (the correlation of their average ranks); None when one
    of them is one value throughout."""
    ra, rb = average_ranks(a) - (a.size + 1) / 2.0, average_ranks(b) - (b.size + 1) / 2.0
    norm = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb) / norm if norm > 0 else None
