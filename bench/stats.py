"""Small statistics helpers (no numpy needed)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["median", "p90", "quantile", "ratio"]


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile `q` in [0, 1] of `values` (NaN when empty)."""
    if not values:
        return math.nan
    data = sorted(values)
    pos = (len(data) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def p90(values: Sequence[float]) -> float:
    return quantile(values, 0.9)


def ratio(a: float, b: float) -> float:
    if not b or math.isnan(a) or math.isnan(b):
        return math.nan
    return a / b
