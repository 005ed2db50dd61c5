"""The per-point checks (DESIGN §8): one point's metrics against the programme's rules.

`duration.min`, `samples.min`, `errors.rate`, `counts.consistent`, `metrics.consistent`,
`littles_law` and `harness.saturated`, each on one point's `metrics` alone (pure: no session).
A figure missing from a point (an older row, an imported point) is "not measured": the
checks that need it say so, as an error where the rule cannot be judged without it
(duration, counts, error rate) and as a warning where the figure is optional.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.programme import ProgrammeRules
from orchestrator.review.findings import ERROR, WARNING, Finding, close, figure, num, pct
from orchestrator.stats.intervals import wilson_interval

__all__ = [
    "check_counts",
    "check_duration",
    "check_error_rate",
    "check_harness",
    "check_littles_law",
    "check_metrics_consistent",
    "check_point",
    "check_samples",
    "in_flight_deviation",
    "in_flight_floor",
]


def check_point(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> list[Finding]:
    """The per-point checks, on one point's `metrics` (pure)."""
    return [
        check_duration(point_id, concurrency, metrics, rules),
        check_samples(point_id, concurrency, metrics, rules),
        check_error_rate(point_id, concurrency, metrics, rules),
        check_counts(point_id, concurrency, metrics),
        check_metrics_consistent(point_id, concurrency, metrics),
        check_littles_law(point_id, concurrency, metrics, rules),
        check_harness(point_id, concurrency, metrics, rules),
    ]


def check_duration(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    d = rules.durations
    minimum = d.minimum_s(concurrency)
    where = (
        f"at concurrency up to {d.low_concurrency_max}"
        if concurrency <= d.low_concurrency_max
        else f"above concurrency {d.low_concurrency_max}"
    )
    duration = figure(metrics, "duration_s")
    if duration is None:
        return Finding(
            "duration.min",
            ERROR,
            False,
            f"level {concurrency}: duration not measured; the programme asks {num(minimum)} s "
            f"{where}.",
            point_id,
        )
    ok = duration >= minimum
    return Finding(
        "duration.min",
        ERROR,
        ok,
        f"level {concurrency}: measured {num(duration)} s, the programme asks {num(minimum)} s "
        f"{where}.",
        point_id,
    )


def check_samples(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    minimum = rules.checks.min_samples
    completed = figure(metrics, "completed")
    if completed is None:
        return Finding(
            "samples.min",
            ERROR,
            False,
            f"level {concurrency}: completed requests not recorded; the programme asks at "
            f"least {minimum}.",
            point_id,
        )
    return Finding(
        "samples.min",
        ERROR,
        completed >= minimum,
        f"level {concurrency}: {completed:.0f} completed requests, the programme asks at least "
        f"{minimum}.",
        point_id,
    )


def check_error_rate(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    limit = rules.checks.max_error_rate
    rate = figure(metrics, "error_rate")
    issued, failed = figure(metrics, "issued"), figure(metrics, "failed")
    if rate is None and issued and failed is not None:
        rate = failed / issued
    if rate is None:
        return Finding(
            "errors.rate",
            ERROR,
            False,
            f"level {concurrency}: error rate not measured; the programme allows at most "
            f"{pct(limit)}.",
            point_id,
        )
    detail = ""
    if issued and failed is not None and 0 <= failed <= issued:
        carried = metrics.get("error_rate_wilson95")
        if isinstance(carried, Sequence) and len(carried) == 2:
            lo, hi = float(carried[0]), float(carried[1])
        else:
            lo, hi = wilson_interval(int(failed), int(issued))
        detail = (
            f" ({failed:.0f} of {issued:.0f} requests failed; 95 % Wilson interval "
            f"{pct(lo)}–{pct(hi)})"
        )
    return Finding(
        "errors.rate",
        ERROR,
        rate <= limit,
        f"level {concurrency}: error rate {pct(rate)}{detail}, the programme allows at most "
        f"{pct(limit)}.",
        point_id,
    )


def check_counts(point_id: int | None, concurrency: int, metrics: Mapping[str, Any]) -> Finding:
    issued, completed = figure(metrics, "issued"), figure(metrics, "completed")
    succeeded, failed = figure(metrics, "succeeded"), figure(metrics, "failed")
    if None in (issued, completed, succeeded, failed):
        return Finding(
            "counts.consistent",
            ERROR,
            False,
            f"level {concurrency}: request counts (issued, completed, succeeded, failed) not "
            "all recorded.",
            point_id,
        )
    assert issued is not None and completed is not None
    assert succeeded is not None and failed is not None
    problems = []
    if issued != succeeded + failed:
        problems.append(
            f"issued {issued:.0f} ≠ succeeded {succeeded:.0f} + failed {failed:.0f} "
            f"(= {succeeded + failed:.0f}): every issued request must end counted as one or "
            "the other"
        )
    if completed != issued:
        problems.append(
            f"completed {completed:.0f} ≠ issued {issued:.0f}: a finished closed-loop level "
            "completes every request it issued (failed ones count as completed)"
        )
    if problems:
        return Finding(
            "counts.consistent",
            ERROR,
            False,
            f"level {concurrency}: {'; '.join(problems)}.",
            point_id,
        )
    return Finding(
        "counts.consistent",
        ERROR,
        True,
        f"level {concurrency}: issued {issued:.0f} = succeeded {succeeded:.0f} + failed "
        f"{failed:.0f}, all completed.",
        point_id,
    )


def check_metrics_consistent(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any]
) -> Finding:
    """QPS, TPS and per-user TPS must follow from the counts, tokens and TPOT they came from."""
    problems = []
    duration = figure(metrics, "duration_s")
    completed, qps = figure(metrics, "completed"), figure(metrics, "qps")
    tokens, tps = figure(metrics, "output_tokens"), figure(metrics, "tps")
    if duration is None or duration <= 0:
        problems.append("duration is missing or not positive")
    else:
        if completed is not None and qps is not None and not close(qps, completed / duration):
            problems.append(
                f"QPS {num(qps)} ≠ completed {completed:.0f} / duration {num(duration)} s "
                f"= {num(completed / duration)}"
            )
        if tokens is not None and tokens > 0:
            if tps is None or tps <= 0:
                problems.append(f"{tokens:.0f} output tokens but TPS is {metrics.get('tps')!r}")
            elif not close(tps, tokens / duration):
                problems.append(
                    f"TPS {num(tps)} ≠ output tokens {tokens:.0f} / duration {num(duration)} s "
                    f"= {num(tokens / duration)}"
                )
    tpot_p90 = figure(metrics, "tpot_p90_ms")
    per_user = figure(metrics, "tps_per_user_v1")
    if tpot_p90 is not None:
        if tpot_p90 <= 0:
            problems.append(f"TPOT p90 {num(tpot_p90)} ms is not positive")
        elif per_user is None or not close(per_user, 1000.0 / tpot_p90):
            problems.append(
                f"per-user TPS (v1.0) {metrics.get('tps_per_user_v1')!r} ≠ 1000 / TPOT p90 "
                f"{num(tpot_p90)} ms = {num(1000.0 / tpot_p90)}"
            )
    if problems:
        return Finding(
            "metrics.consistent",
            ERROR,
            False,
            f"level {concurrency}: {'; '.join(problems)}.",
            point_id,
        )
    return Finding(
        "metrics.consistent",
        ERROR,
        True,
        f"level {concurrency}: QPS, TPS and per-user TPS follow from the counts, tokens and TPOT.",
        point_id,
    )


def in_flight_floor(metrics: Mapping[str, Any]) -> float:
    """The least share of its concurrency a healthy closed loop holds over MLPerf's window.

    MLPerf's duration runs from tracking start to the *last completion*. Every slot of a
    closed loop is busy until issuing stops, at least `duration − L_max` (the last request
    to finish took at most L_max), so mean in flight / C lies between 1 − L_max / duration
    and 1: near 1 when the slots finish together (a batching server completing a batch),
    about 1 − L / (2 · duration) when they finish spread out. At the programme's 600 s
    levels with second-long latencies the allowance is under 1 %; at a demo's few-second
    levels it is large, and without it Little's law would blame the endpoint for the
    harness's stop condition. L_max is the slowest request (else p99, else the mean).
    """
    duration_s = figure(metrics, "duration_s")
    latency = metrics.get("latency_ms")
    slowest_ms = latency.get("max") if isinstance(latency, Mapping) else None
    if not isinstance(slowest_ms, int | float) or isinstance(slowest_ms, bool):
        slowest_ms = figure(metrics, "latency_p99_ms") or figure(metrics, "latency_avg_ms")
    if slowest_ms is None or duration_s is None or duration_s <= 0:
        return 1.0
    return max(0.0, 1.0 - slowest_ms / 1000.0 / duration_s)


def in_flight_deviation(ratio: float, floor: float) -> float:
    """How far `ratio` (mean in flight / C) lies outside [floor, 1]: 0 inside."""
    if ratio > 1.0:
        return ratio - 1.0
    if ratio < floor:
        return ratio / floor - 1.0 if floor > 0 else -1.0
    return 0.0


def check_littles_law(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    """Closed loop: mean requests in flight = mean latency × QPS must be the concurrency,
    less what the drain tail allows (see `in_flight_floor`)."""
    tolerance = rules.checks.littles_law_tolerance
    latency_ms, qps = figure(metrics, "latency_avg_ms"), figure(metrics, "qps")
    if latency_ms is None or qps is None or concurrency <= 0:
        return Finding(
            "littles_law",
            WARNING,
            False,
            f"level {concurrency}: mean latency or QPS not measured; Little's law cannot be "
            "checked.",
            point_id,
        )
    in_flight = latency_ms / 1000.0 * qps
    floor = in_flight_floor(metrics)
    deviation = in_flight_deviation(in_flight / concurrency, floor)
    band = (
        f"{concurrency}"
        if floor >= 1.0
        else f"{num(floor * concurrency)}–{concurrency} once the drain tail is allowed for"
    )
    return Finding(
        "littles_law",
        ERROR,
        abs(deviation) <= tolerance,
        f"level {concurrency}: mean latency {num(latency_ms / 1000.0)} s × QPS {num(qps)} = "
        f"{num(in_flight)} requests in flight against {band} ({deviation * 100:+.1f} % "
        f"outside); Little's law must hold within ±{tolerance:.0%}.",
        point_id,
    )


def check_harness(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    """Was the endpoint measured, or the load generator? (DESIGN §5, harness health)."""
    c = rules.checks
    valid = metrics.get("valid")
    delivered = figure(metrics, "delivered_concurrency")
    read_delay = figure(metrics, "read_delay_p99_ms")
    if not isinstance(valid, bool) and delivered is None and read_delay is None:
        return Finding(
            "harness.saturated",
            WARNING,
            False,
            f"level {concurrency}: harness health not measured (no validity verdict, delivered "
            "concurrency or read delay, as for an imported point): nothing shows that the "
            "client kept up.",
            point_id,
        )
    problems, seen = [], []
    if valid is False:
        reasons = metrics.get("invalid_reasons") or []
        problems.append(
            "the load generator flagged the level invalid"
            + (f": {'; '.join(map(str, reasons))}" if reasons else "")
        )
    elif valid is True:
        seen.append("the load generator found the level valid")
    if delivered is not None and concurrency > 0:
        # held against the least a healthy closed loop holds over the window (drain tail)
        floor = in_flight_floor(metrics)
        ratio = 1.0 + min(0.0, in_flight_deviation(delivered / concurrency, floor))
        text = (
            f"delivered concurrency {num(delivered)} is {ratio:.0%} of "
            f"{num(floor * concurrency)}–{concurrency} (drain tail allowed for), the programme "
            f"asks at least {c.min_delivered_concurrency:.0%}"
        )
        (problems if ratio < c.min_delivered_concurrency else seen).append(text)
    if read_delay is not None:
        text = (
            f"client read delay p99 {num(read_delay)} ms, the programme allows at most "
            f"{num(c.max_read_delay_p99_ms)} ms"
        )
        (problems if read_delay > c.max_read_delay_p99_ms else seen).append(text)
    if problems:
        return Finding(
            "harness.saturated",
            ERROR,
            False,
            f"level {concurrency}: {'; '.join(problems)} — the figures describe the client, "
            "not the endpoint.",
            point_id,
        )
    return Finding(
        "harness.saturated", ERROR, True, f"level {concurrency}: {'; '.join(seen)}.", point_id
    )
