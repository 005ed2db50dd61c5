"""Concurrency coverage of a curve by region, per the MLPerf Endpoints rules (§5, Pareto curve).

A curve must sample the whole range of concurrency its system claims to serve, not a
flattering corner of it. The regions:

- **Ultra-Low**: the curve's lowest point, C_min, which must lie in 1–32 (`ultra_low_max`).
  Ultra-Low is fixed at 1–32; the region boundaries below start from C_min, so the
  Ultra-Low band of a given curve is 1 … C_min and C_min itself is its point.
- With C_max (> 32) the declared maximum concurrency and I = log2(C_max − C_min) / 3:
  **Low** C_min+1 … round(C_min + 2^I), **Med** … round(C_min + 2^(2I)), **High** … C_max.
- A **margin** C_max+1 … ceil((1 + margin)·C_max) is allowed but does not satisfy High
  coverage; a point above it is out of range.

Rounding is banker's (half to even), Python's `round()`, as the rules say. With integer
C_min and C_max the exact values C_min + (C_max − C_min)^(1/3) and C_min + (C_max −
C_min)^(2/3) are never exactly halves (a half would need a non-integer C_max − C_min), and
for C_max below 10^6 they stay more than 1e-10 from a half — a thousand times double
precision's error at that size — so floating point gives the exact rounding; tests compare
against 50-digit arithmetic. The margin is computed
exactly: ceil(1.1 · 50) is 55, where floating point says 55.00000000000001 → 56.

A zero-width region (rounding collisions at small C_max − C_min) has "a single valid
concurrency level at the boundary value": a point at that value covers it.

Counts — the rules' "min 1+3+3 (+1 Offline in v1.0), cap 32" — read here as: 1 Ultra-Low
point, 3 mandatory points (one in each of Low, Med and High; these four are the points
whose accuracy v1.0 requires), and 3 more at the submitter's choice, anywhere in range: so
every region covered *and* at least `min_points` (7) distinct levels in all, at most
`max_points` (32). Offline is not a concurrency level and is not counted. This matches the
official checker, which requires each region covered and 7–32 points.

Pure: levels in, findings data out. `orchestrator.review.curve_checks` turns them into findings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from math import log2

from orchestrator.programme import RegionRules
from orchestrator.review.findings import ERROR, WARNING

REGION_NAMES = ("ultra_low", "low", "med", "high")
LABELS = {"ultra_low": "Ultra-Low", "low": "Low", "med": "Med", "high": "High"}


@dataclass(frozen=True)
class Bounds:
    """Inclusive concurrency range; empty (zero width) when start > end."""

    start: int
    end: int

    def contains(self, concurrency: int) -> bool:
        return self.start <= concurrency <= self.end

    @property
    def zero_width(self) -> bool:
        return self.start > self.end

    def covered_by(self, concurrency: int) -> bool:
        """A zero-width region is covered by a point at its boundary value."""
        return concurrency == self.end if self.zero_width else self.contains(concurrency)

    def __str__(self) -> str:
        return str(self.end) if self.zero_width else f"{self.start}–{self.end}"


@dataclass(frozen=True)
class Regions:
    c_min: int
    c_max: int
    ultra_low: Bounds
    low: Bounds
    med: Bounds
    high: Bounds
    margin: Bounds

    def region_of(self, concurrency: int) -> str | None:
        """ "ultra_low", "low", "med", "high", "margin", or None above the margin."""
        for name in (*REGION_NAMES, "margin"):
            if getattr(self, name).contains(concurrency):
                return name
        return None


def half_even(value: float) -> int:
    """Banker's rounding, as the rules ask: 2.5 → 2, 3.5 → 4."""
    return round(value)


def margin_end(c_max: int, margin: float) -> int:
    """ceil((1 + margin) · c_max), exactly: the margin is read as the decimal it was written."""
    return math.ceil(c_max * (1 + Fraction(str(margin))))


def regions(c_min: int, c_max: int, *, ultra_low_max: int = 32, margin: float = 0.10) -> Regions:
    """The region bounds of a curve whose lowest point is `c_min` and declared maximum `c_max`.

    >>> r = regions(8, 520)
    >>> str(r.low), str(r.med), str(r.high), str(r.margin)
    ('9–16', '17–72', '73–520', '521–572')
    """
    if not 1 <= c_min <= ultra_low_max:
        raise ValueError(f"C_min must be in 1–{ultra_low_max}, got {c_min}")
    if c_max <= ultra_low_max:
        raise ValueError(f"C_max must be above {ultra_low_max}, got {c_max}")
    interval = log2(c_max - c_min) / 3
    low_end = half_even(c_min + 2**interval)
    med_end = half_even(c_min + 2 ** (2 * interval))
    return Regions(
        c_min=c_min,
        c_max=c_max,
        ultra_low=Bounds(1, c_min),
        low=Bounds(c_min + 1, low_end),
        med=Bounds(low_end + 1, med_end),
        high=Bounds(med_end + 1, c_max),
        margin=Bounds(c_max + 1, margin_end(c_max, margin)),
    )


@dataclass(frozen=True)
class CoverageFinding:
    """One result of the coverage rule; `level` names the offending concurrency, if one."""

    check: str  # regions.coverage | regions.count | regions.range | regions.declared_max
    severity: str
    passed: bool
    message: str
    level: int | None = None


def coverage(levels: Iterable[int], c_max: int | None, rules: RegionRules) -> list[CoverageFinding]:
    """Coverage findings for a whole curve: its distinct `levels` and declared `c_max`.

    `c_max` None: the highest level stands in for it, and a warning says so. Coverage
    findings are errors when `rules.required`, else warnings; a point above the margin is
    always an error (it contradicts the declared maximum).
    """
    severity = ERROR if rules.required else WARNING
    distinct = sorted({int(c) for c in levels})
    out: list[CoverageFinding] = []
    if not distinct:
        return [CoverageFinding("regions.coverage", severity, False, "the curve has no points.")]
    if c_max is None:
        c_max = distinct[-1]
        out.append(
            CoverageFinding(
                "regions.declared_max",
                WARNING,
                False,
                f"the system declares no maximum concurrency (C_max); the highest measured "
                f"level, {c_max}, stands in for it. Declare max_concurrency so that the "
                "regions describe what the system claims to serve.",
            )
        )
    else:
        out.append(
            CoverageFinding(
                "regions.declared_max", WARNING, True, f"declared maximum concurrency {c_max}."
            )
        )
    ul_max = rules.ultra_low_max
    if c_max <= ul_max:
        out.append(
            CoverageFinding(
                "regions.coverage",
                severity,
                False,
                f"C_max {c_max} is not above {ul_max}: the rules need a curve that reaches "
                f"beyond the Ultra-Low region (1–{ul_max}) to define Low, Med and High.",
            )
        )
        return out
    c_min = distinct[0]
    if c_min > ul_max:
        out.append(
            CoverageFinding(
                "regions.coverage",
                severity,
                False,
                f"Ultra-Low (1–{ul_max}) has no point: the lowest level is {c_min}. "
                f"Regions below are computed from C_min = {ul_max}.",
            )
        )
        c_min = ul_max
    bounds = regions(c_min, c_max, ultra_low_max=ul_max, margin=rules.margin)
    in_range = [c for c in distinct if c <= bounds.margin.end]
    for c in distinct:
        if c > bounds.margin.end:
            out.append(
                CoverageFinding(
                    "regions.range",
                    ERROR,
                    False,
                    f"level {c} is above the allowed range: C_max {c_max} plus the "
                    f"{rules.margin:.0%} margin ends at {bounds.margin.end}. Declare a higher "
                    "max_concurrency or drop the level.",
                    level=c,
                )
            )
    for name in REGION_NAMES:
        if name == "ultra_low" and distinct[0] > ul_max:
            continue  # reported above
        region: Bounds = getattr(bounds, name)
        hits = [c for c in in_range if region.covered_by(c)]
        label = LABELS[name]
        if name == "ultra_low":
            region_text = f"1–{ul_max}, lowest level C_min = {c_min}"
        else:
            region_text = str(region)
        if hits:
            message = f"{label} ({region_text}) covered by level(s) {', '.join(map(str, hits))}."
        else:
            margin_note = ""
            if name == "high" and any(bounds.margin.contains(c) for c in in_range):
                margin_note = (
                    f" Levels in the margin ({bounds.margin}) do not count for High coverage."
                )
            message = (
                f"{label} ({region}, from C_min {c_min} and C_max {c_max}) has no point: "
                f"measure at least one level in it.{margin_note}"
            )
        out.append(CoverageFinding("regions.coverage", severity, bool(hits), message))
    n = len(in_range)
    if n < rules.min_points:
        out.append(
            CoverageFinding(
                "regions.count",
                severity,
                False,
                f"the curve has {n} distinct level(s) in range; the programme asks at least "
                f"{rules.min_points} (one Ultra-Low, one in each of Low, Med and High, the "
                "rest at the submitter's choice).",
            )
        )
    elif n > rules.max_points:
        out.append(
            CoverageFinding(
                "regions.count",
                severity,
                False,
                f"the curve has {n} distinct levels; the programme allows at most "
                f"{rules.max_points}.",
            )
        )
    else:
        out.append(
            CoverageFinding(
                "regions.count",
                severity,
                True,
                f"{n} distinct levels (the programme asks {rules.min_points}–{rules.max_points}).",
            )
        )
    return out
