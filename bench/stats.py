"""Small statistics helpers (no numpy needed)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["median", "p90", "quantile", "ratio", "round_order"]

T = TypeVar("T")


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


def round_order(items: Sequence[T], i: int) -> list[T]:
    """The contenders' order in round `i` of an interleaved measurement: a permutation
    drawn afresh each round, seeded by `i` so a run can be repeated.

    Not a rotation: rotating a fixed list keeps each contender's predecessor almost always
    the same one (the list is cyclic), and a run pays for what the run before it left
    behind. Measured: in a round of ours, the compiled graph and openai-agents, whichever
    ran right after openai-agents took 0.1-0.3 ms longer (2.3 -> 2.6 ms), so the rotated
    six-contender table showed the facade 1.14x the graph it drives where each, given
    every predecessor alike, is within 1.05x (bench/what_was_tried.md)."""
    order = list(items)
    random.Random(i).shuffle(order)
    return order
