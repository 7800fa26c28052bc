"""Small numeric helpers shared by the metrics and the arms: rates, distributions, median ratios."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def rate_of(num: float, den: float) -> float | None:
    return round(num / den, 4) if den else None


def dist(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "median": None, "p95": None, "max": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"n": len(ordered), "median": round(statistics.median(ordered), 2), "p95": round(p95, 2),
            "max": round(ordered[-1], 2)}


def ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    if not numerators or not denominators:
        return None
    den = statistics.median(denominators)
    return round(statistics.median(numerators) / den, 2) if den else None
