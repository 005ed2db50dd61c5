"""Checks on the whole curve a submission would leave: region coverage and reproducibility.

- `regions.*`: concurrency coverage of the whole curve (this submission's points plus the
  curve's live accepted points), see `orchestrator.review.regions`.
- `reproducibility`: against the live accepted point of the same (system, workload) at the
  same concurrency from another submission.

Reproducibility, decided: MLPerf (§6.6) gives ±5 % throughput on the same system as the
margin an audit must reproduce, and a Preview result must come back within 5 % when the
system becomes Available. Rolling submissions exist so that systems improve; so a newer
point *faster* by more than the margin is a warning (it will supersede the older point; the
operator should see that the curve moves), while one *slower* by more than the margin is an
error: either the published point does not reproduce, or the system changed and should be
declared as a new system. Either way an operator must look before the curve changes. QPS
and TPS are compared; the worse deviation decides.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.programme import ProgrammeRules
from orchestrator.review.findings import ERROR, WARNING, Finding, figure, num
from orchestrator.review.regions import coverage
from orchestrator.runs.models import Point
from orchestrator.systems.models import System

__all__ = ["check_regions", "check_reproducibility"]


def check_regions(
    points: Sequence[Point],
    published: Sequence[Point],
    system: System | None,
    rules: ProgrammeRules,
) -> list[Finding]:
    """Coverage of the curve this submission would leave: its points and the live ones."""
    by_level: dict[int, int | None] = {p.concurrency: p.id for p in published}
    by_level.update({p.concurrency: p.id for p in points})  # this submission's win
    c_max = system.max_concurrency if system is not None else None
    return [
        Finding(
            f.check,
            f.severity,
            f.passed,
            f.message,
            by_level.get(f.level) if f.level is not None else None,
        )
        for f in coverage(by_level, c_max, rules.regions)
    ]


def check_reproducibility(
    point: Point, published: Sequence[Point], rules: ProgrammeRules
) -> Finding:
    tolerance = rules.checks.reproducibility_tolerance
    earlier = [p for p in published if p.concurrency == point.concurrency]
    where = f"level {point.concurrency}"
    if not earlier:
        return Finding(
            "reproducibility",
            ERROR,
            True,
            f"{where}: no accepted point at this concurrency yet; nothing to reproduce.",
            point.id,
        )
    old = earlier[-1]  # the newest live one
    deviations = []
    for key, unit in (("qps", "req/s"), ("tps", "tok/s")):
        new_value, old_value = figure(point.metrics, key), figure(old.metrics, key)
        if new_value is not None and old_value:
            deviations.append((new_value / old_value - 1, key.upper(), new_value, old_value, unit))
    if not deviations:
        return Finding(
            "reproducibility",
            WARNING,
            False,
            f"{where}: throughput not measured on this point or on accepted point {old.id}; "
            "reproducibility cannot be checked.",
            point.id,
        )
    text = "; ".join(
        f"{name} {num(new)} {unit} vs {num(was)} ({dev * 100:+.1f} %)"
        for dev, name, new, was, unit in deviations
    )
    worst = min(dev for dev, *_ in deviations)
    best = max(dev for dev, *_ in deviations)
    rule = f"the programme asks ±{tolerance:.0%} against accepted point {old.id} (same system)"
    if worst < -tolerance:
        return Finding(
            "reproducibility",
            ERROR,
            False,
            f"{where}: slower than the accepted point: {text}; {rule}. Either the published "
            "point does not reproduce or the system changed (declare a new system).",
            point.id,
        )
    if best > tolerance:
        return Finding(
            "reproducibility",
            WARNING,
            False,
            f"{where}: faster than the accepted point: {text}; {rule}. Accepting it supersedes "
            "the older point.",
            point.id,
        )
    return Finding("reproducibility", ERROR, True, f"{where}: {text}; {rule}.", point.id)
