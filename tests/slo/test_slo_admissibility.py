"""`evaluate`: one reason per limit, each limit able to fail a point alone; unmeasured fails."""

from __future__ import annotations

from typing import Any

import pytest
from slo.slo_world import summary

from orchestrator.runs.metrics import point_metrics
from orchestrator.slo.admissibility import evaluate, workload_quality
from orchestrator.slo.schemas import SloLimits

INTERACTIVE = SloLimits.model_validate(
    {
        "ttft_ms": {"percentile": 99, "max": 1000},
        "tpot_ms": {"percentile": 99, "max": 50},
        "latency_ms": {"percentile": 99, "max": 20000},
        "error_rate": 0.001,
    }
)


def metrics(**figures: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"qps": 10, "ttft_p99_ms": 500, "tpot_p99_ms": 20}
    base.update(figures)
    return point_metrics(summary(**base), 8)


def test_a_point_within_every_limit_is_admissible_with_a_reason_per_limit() -> None:
    verdict = evaluate(metrics(), INTERACTIVE)
    assert verdict.admissible
    assert [r.limit for r in verdict.reasons] == [
        "ttft_ms",
        "tpot_ms",
        "latency_ms",
        "error_rate",
        "quality",
    ]
    ttft = verdict.reasons[0]
    assert ttft.passed is True and ttft.measured == pytest.approx(500) and ttft.threshold == 1000
    assert ttft.message == "TTFT p99 500 ms <= 1000 ms"
    assert verdict.quality == "not measured"
    assert verdict.reasons[-1].passed is None
    assert verdict.reasons[-1].message.startswith("quality: not measured")


@pytest.mark.parametrize(
    ("figures", "limit", "message"),
    [
        ({"ttft_p99_ms": 1240}, "ttft_ms", "TTFT p99 1240 ms > 1000 ms"),
        ({"tpot_p99_ms": 51}, "tpot_ms", "TPOT p99 51 ms > 50 ms"),
        ({"latency_p99_ms": 25000}, "latency_ms", "latency p99 25000 ms > 20000 ms"),
        ({"failed": 1}, "error_rate", "error rate 1 % > 0.1 %"),
    ],
)
def test_each_limit_fails_a_point_alone(figures: dict[str, Any], limit: str, message: str) -> None:
    verdict = evaluate(metrics(**figures), INTERACTIVE)
    assert not verdict.admissible
    failing = [r for r in verdict.reasons if r.passed is not True and r.limit != "quality"]
    assert [(r.limit, r.passed, r.message) for r in failing] == [(limit, False, message)]
    assert verdict.failures == tuple(failing)


def test_exactly_at_the_limit_passes() -> None:
    verdict = evaluate(metrics(ttft_p99_ms=1000), INTERACTIVE)
    assert verdict.reasons[0].passed is True and verdict.admissible


def test_rounding_never_prints_a_failure_as_equal_figures() -> None:
    verdict = evaluate(metrics(ttft_p99_ms=1000.2), INTERACTIVE)
    assert verdict.reasons[0].passed is False
    assert verdict.reasons[0].message == "TTFT p99 1000.2 ms > 1000 ms"


def test_tpot_without_streaming_is_not_measured_and_fails_the_point() -> None:
    verdict = evaluate(metrics(tpot_p99_ms=None), INTERACTIVE)
    tpot = verdict.reasons[1]
    assert (tpot.limit, tpot.passed, tpot.measured, tpot.threshold) == ("tpot_ms", None, None, 50)
    assert tpot.message.startswith("TPOT p99 not measured")
    assert "stream" in tpot.message
    assert not verdict.admissible and verdict.failures == (tpot,)


def test_a_profile_without_tpot_admits_a_point_without_streaming() -> None:
    limits = SloLimits.model_validate({"ttft_ms": {"percentile": 99, "max": 1000}})
    verdict = evaluate(metrics(tpot_p99_ms=None), limits)
    assert verdict.admissible and [r.limit for r in verdict.reasons] == ["ttft_ms", "quality"]


def test_the_percentile_is_part_of_the_profile() -> None:
    # p99 = 1200 ms, p90 = 0.8 × p99 = 960 ms: the same point passes at p90 and fails at p99
    point = metrics(ttft_p99_ms=1200)
    at_p90 = SloLimits.model_validate({"ttft_ms": {"percentile": 90, "max": 1000}})
    at_p99 = SloLimits.model_validate({"ttft_ms": {"percentile": 99, "max": 1000}})
    at_p999 = SloLimits.model_validate({"ttft_ms": {"percentile": 99.9, "max": 1500}})
    assert evaluate(point, at_p90).admissible
    assert evaluate(point, at_p90).reasons[0].message == "TTFT p90 960 ms <= 1000 ms"
    assert not evaluate(point, at_p99).admissible
    assert evaluate(point, at_p999).reasons[0].message == "TTFT p99.9 1440 ms <= 1500 ms"


def test_a_percentile_the_point_lacks_is_not_measured() -> None:
    limits = SloLimits.model_validate({"ttft_ms": {"percentile": 95, "max": 1000}})
    verdict = evaluate(metrics(), limits)  # the summary carries 50, 90, 99 and 99.9 only
    assert verdict.reasons[0].passed is None and not verdict.admissible
    assert verdict.reasons[0].message == "TTFT p95 not measured"


@pytest.mark.parametrize(
    "old",
    [
        {},
        {"qps": 3.0},
        {"ttft_ms": None, "tpot_ms": "garbage", "error_rate": "x"},
        {"ttft_ms": {"percentiles": None}, "latency_ms": {"percentiles": {"99.0": float("nan")}}},
    ],
)
def test_old_or_odd_metrics_are_not_measured_never_an_exception(old: dict[str, Any]) -> None:
    verdict = evaluate(old, INTERACTIVE)
    assert not verdict.admissible
    assert all(r.passed is None for r in verdict.reasons)


def test_flat_figures_of_older_points_are_read() -> None:
    verdict = evaluate(
        {"ttft_p99_ms": 900.0, "tpot_p99_ms": 60.0, "issued": 1000, "failed": 0}, INTERACTIVE
    )
    assert [r.passed for r in verdict.reasons] == [True, False, None, True, None]


def test_quality_failed_blocks_and_passed_does_not() -> None:
    good = metrics()
    assert not evaluate(good, INTERACTIVE, quality="failed").admissible
    assert evaluate(good, INTERACTIVE, quality="failed").failures[0].message == "quality: failed"
    assert evaluate(good, INTERACTIVE, quality="passed").admissible
    with pytest.raises(ValueError, match="quality"):
        evaluate(good, INTERACTIVE, quality="great")


def test_workload_quality_says_why_it_is_not_measured() -> None:
    assert workload_quality({"accuracy_suite": None}) == (
        "not measured",
        "quality: not measured (workload has no accuracy suite)",
    )
    quality, note = workload_quality({"accuracy_suite": "gsm8k"})
    assert quality == "not measured" and "gsm8k" in note
