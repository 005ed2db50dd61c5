"""Confidence intervals for proportions, such as the error rate of a level.

The Wilson score interval stays inside [0, 1] and behaves at 0 or n failures, where the
normal ("Wald") interval collapses to a width of zero; a level with no failures in 200
requests still says "up to 1.9 % at 95 %", not "exactly 0 %". No scipy: the normal quantile
comes from `statistics.NormalDist`.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Final

# Two-sided 95 %: the 0.975 quantile of the standard normal distribution.
Z_95: Final = 1.959963984540054


def z_value(confidence: float) -> float:
    """Two-sided standard-normal quantile for `confidence` in (0, 1); 0.95 -> 1.95996..."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if confidence == 0.95:
        return Z_95
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(failures: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval (lower, upper) for the proportion `failures / n`.

    With no trials nothing is known, so the interval is the whole of [0, 1].

    >>> [round(b, 4) for b in wilson_interval(0, 10)]
    [0.0, 0.2775]
    """
    if n < 0 or not 0 <= failures <= max(n, 0):
        raise ValueError(f"need 0 <= failures <= n, got failures={failures}, n={n}")
    z = z_value(confidence)
    if n == 0:
        return 0.0, 1.0
    p_hat = failures / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    center = (p_hat + z2 / (2.0 * n)) / denominator
    half_width = z * math.sqrt(p_hat * (1.0 - p_hat) / n + z2 / (4.0 * n * n)) / denominator
    # At the edges the exact bound is 0 (or 1); rounding would leave 1e-17 instead.
    lower = 0.0 if failures == 0 else max(0.0, center - half_width)
    upper = 1.0 if failures == n else min(1.0, center + half_width)
    # Rounding must not push a bound past the point estimate either.
    return min(lower, p_hat), max(upper, p_hat)
