"""Exact summary statistics of one series (TTFT, TPOT, latency, sequence lengths, ...).

Percentiles are exact over the observed values (`np.percentile(..., method="lower")`), so
every reported percentile is a value some request actually had — never an interpolation
between two requests. The percentile set, the string keys ("99.9", "99.0", ..., "1.0") and
the object layout (`total, min, max, median, avg, std_dev, percentiles`) are those of the
MLCommons reference client's `result_summary.json`, so that our files read the same. Integer
input (nanoseconds, token counts) keeps exact integer `total`, `min` and `max`; everything
else is float64. The standard deviation is the population one (ddof=0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from orchestrator.stats.jsontypes import JsonObject

PERCENTILES: Final[tuple[float, ...]] = (
    99.9,
    99.0,
    97.0,
    95.0,
    90.0,
    80.0,
    75.0,
    50.0,
    25.0,
    10.0,
    5.0,
    1.0,
)


def percentile_key(p: float) -> str:
    """The JSON key of percentile `p`, as the reference client writes it: 99 -> "99.0"."""
    return repr(float(p))


@dataclass(frozen=True, slots=True)
class Distribution:
    """Summary of a non-empty series; values are in the unit of the input (ns, tokens).

    `total`, `min` and `max` are `int` when the input was integer, `float` otherwise;
    `median` equals `percentiles["50.0"]`.
    """

    n: int
    total: int | float
    min: int | float
    max: int | float
    median: float
    avg: float
    std_dev: float
    percentiles: dict[str, float]

    def to_json(self) -> JsonObject:
        """The reference client's object: `total, min, max, median, avg, std_dev, percentiles`."""
        return {
            "total": self.total,
            "min": self.min,
            "max": self.max,
            "median": self.median,
            "avg": self.avg,
            "std_dev": self.std_dev,
            "percentiles": dict(self.percentiles),
        }


def distribution(values: npt.ArrayLike) -> Distribution | None:
    """Summarize `values` (flattened); None when there are none.

    >>> distribution([1, 2, 3, 4]).percentiles["50.0"]
    2.0
    """
    arr = np.asarray(values).reshape(-1)
    n = int(arr.shape[0])
    if n == 0:
        return None
    kind = arr.dtype.kind
    if kind in "iu":
        # Python ints: an exact total at any size (an int64 sum of a million ns latencies
        # would still fit, but the exactness should not depend on that).
        total: int | float = sum(arr.tolist())
        low: int | float = int(arr.min())
        high: int | float = int(arr.max())
        avg = total / n
    elif kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError("distribution() got NaN or infinite values")
        total = float(np.sum(arr, dtype=np.float64))
        low = float(arr.min())
        high = float(arr.max())
        avg = total / n
    else:
        raise TypeError(f"distribution() needs integer or float values, got dtype {arr.dtype}")

    observed = np.percentile(arr, PERCENTILES, method="lower")
    percentiles = {percentile_key(p): float(v) for p, v in zip(PERCENTILES, observed, strict=True)}
    median = float(np.percentile(arr, 50.0, method="lower"))
    # Shifting by an observed value changes nothing mathematically but keeps precision for
    # large offsets (monotonic-clock ns) and makes a constant series exactly 0.
    std_dev = float(np.std(arr.astype(np.float64) - median))
    return Distribution(
        n=n,
        total=total,
        min=low,
        max=high,
        median=median,
        avg=avg,
        std_dev=std_dev,
        percentiles=percentiles,
    )
