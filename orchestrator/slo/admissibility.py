"""Is a point admissible under an SLO profile? Yes or no, with one reason per limit.

Pure: a point's `metrics` (orchestrator.runs.metrics.point_metrics) and a profile's limits
in, a verdict out. A limit passes when the measured figure is at most the threshold. A
limit whose figure was not measured fails the point (`passed=None`): a buyer who asked for
TPOT p99 <= 50 ms gets no promise from a run that never saw a token stream (TPOT exists only
for streamed responses), and silence is not a pass. Older points may lack keys; a missing
or malformed figure is "not measured", never an exception.

Quality: until accuracy runs exist, a workload without an accuracy suite has no quality
gate, and "not measured" does not block; "failed" does. Every verdict carries the quality
so that every table can say it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.runs.metrics import DISTRIBUTIONS
from orchestrator.slo.schemas import LatencyLimit, SloLimits
from orchestrator.stats.percentiles import percentile_key

QUALITY_PASSED = "passed"
QUALITY_FAILED = "failed"
QUALITY_NOT_MEASURED = "not measured"
QUALITIES = (QUALITY_PASSED, QUALITY_FAILED, QUALITY_NOT_MEASURED)

LABELS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "latency_ms": "latency"}
_FLAT_PREFIX = {target: source for source, target in DISTRIBUTIONS.items()}


@dataclass(frozen=True)
class Reason:
    limit: str  # "ttft_ms", "tpot_ms", "latency_ms", "error_rate", "quality"
    passed: bool | None  # None: not measured
    measured: float | None
    threshold: float | None
    message: str


@dataclass(frozen=True)
class Admissibility:
    admissible: bool
    reasons: tuple[Reason, ...]
    quality: str  # "passed" | "failed" | "not measured"

    @property
    def failures(self) -> tuple[Reason, ...]:
        """The reasons that make the point inadmissible (failed or not measured limits)."""
        return tuple(r for r in self.reasons if _blocks(r))


def _blocks(reason: Reason) -> bool:
    if reason.limit == "quality":
        return reason.passed is False
    return reason.passed is not True


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def figure(metrics: Mapping[str, Any], key: str) -> float | None:
    """The figure `key` of a point's metrics; None if absent, not a number or not finite."""
    return _number(metrics.get(key))


def percentile_label(percentile: float) -> str:
    """99.0 -> "p99", 99.9 -> "p99.9"."""
    return f"p{percentile:g}"


def limit_label(limit: str, latency: LatencyLimit | None = None) -> str:
    """ "TTFT p99", "error rate": how tables name a limit."""
    if latency is not None:
        return f"{LABELS[limit]} {percentile_label(latency.percentile)}"
    return "error rate" if limit == "error_rate" else limit


def measured_percentile_ms(
    metrics: Mapping[str, Any], limit: str, percentile: float
) -> float | None:
    """The point's `percentile` of distribution `limit` ("ttft_ms", ...) in ms, or None."""
    dist = metrics.get(limit)
    if isinstance(dist, Mapping):
        pct = dist.get("percentiles")
        if isinstance(pct, Mapping):
            value = _number(pct.get(percentile_key(percentile)))
            if value is not None:
                return value
    # points written before the distributions were kept whole carry only the flat figures
    if float(percentile).is_integer():
        return figure(metrics, f"{_FLAT_PREFIX[limit]}_p{int(percentile)}_ms")
    return None


def measured_error_rate(metrics: Mapping[str, Any]) -> float | None:
    rate = figure(metrics, "error_rate")
    if rate is not None:
        return rate
    issued, failed = figure(metrics, "issued"), figure(metrics, "failed")
    if issued and failed is not None and issued > 0:
        return failed / issued
    return None


def _ms(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _pct(value: float) -> str:
    return f"{value * 100:.3g} %"


def _compare(label: str, measured: float, threshold: float, fmt: str) -> tuple[bool, str]:
    show = _ms if fmt == "ms" else _pct
    unit = " ms" if fmt == "ms" else ""
    passed = measured <= threshold
    shown_m, shown_t = show(measured), show(threshold)
    if shown_m == shown_t and measured != threshold:
        # rounding would print "1000 ms > 1000 ms"; show the digits that differ
        shown_m, shown_t = f"{measured:.6g}", f"{threshold:.6g}"
        if fmt != "ms":
            shown_m, shown_t = f"{measured * 100:.6g} %", f"{threshold * 100:.6g} %"
    sign = "<=" if passed else ">"
    return passed, f"{label} {shown_m}{unit} {sign} {shown_t}{unit}"


def _latency_reason(metrics: Mapping[str, Any], limit: str, bound: LatencyLimit) -> Reason:
    label = limit_label(limit, bound)
    measured = measured_percentile_ms(metrics, limit, bound.percentile)
    if measured is None:
        message = f"{label} not measured"
        if limit == "tpot_ms":
            message += " (TPOT needs streamed responses; a run without them cannot meet it)"
        return Reason(limit, None, None, bound.max, message)
    passed, message = _compare(label, measured, bound.max, "ms")
    return Reason(limit, passed, measured, bound.max, message)


def _quality_reason(quality: str) -> Reason:
    if quality not in QUALITIES:
        raise ValueError(f"quality must be one of {QUALITIES}, not {quality!r}")
    passed = {QUALITY_PASSED: True, QUALITY_FAILED: False}.get(quality)
    note = " (does not block until accuracy runs exist)" if passed is None else ""
    return Reason("quality", passed, None, None, f"quality: {quality}{note}")


def evaluate(
    metrics: Mapping[str, Any], limits: SloLimits, *, quality: str = QUALITY_NOT_MEASURED
) -> Admissibility:
    """The verdict of one point under `limits`: one reason per limit set, then quality.

    >>> evaluate(point.metrics, limits_of(get_profile(session, name="interactive"))).admissible
    """
    reasons: list[Reason] = []
    for limit in ("ttft_ms", "tpot_ms", "latency_ms"):
        bound = getattr(limits, limit)
        if bound is not None:
            reasons.append(_latency_reason(metrics, limit, bound))
    if limits.error_rate is not None:
        rate = measured_error_rate(metrics)
        if rate is None:
            reasons.append(
                Reason("error_rate", None, None, limits.error_rate, "error rate not measured")
            )
        else:
            passed, message = _compare("error rate", rate, limits.error_rate, "fraction")
            reasons.append(Reason("error_rate", passed, rate, limits.error_rate, message))
    reasons.append(_quality_reason(quality))
    admissible = not any(_blocks(r) for r in reasons)
    return Admissibility(admissible=admissible, reasons=tuple(reasons), quality=quality)


def workload_quality(definition: Mapping[str, Any]) -> tuple[str, str]:
    """The quality of points of a workload and the note every table prints.

    No accuracy suite: "not measured", no quality gate. A suite: still "not measured" until
    accuracy runs exist (a later issue); the note says which case it is.
    """
    if not definition.get("accuracy_suite"):
        return QUALITY_NOT_MEASURED, "quality: not measured (workload has no accuracy suite)"
    return (
        QUALITY_NOT_MEASURED,
        f"quality: not measured (accuracy suite {definition['accuracy_suite']} not run yet; "
        "it does not block)",
    )
