"""Hypothesis properties of `distribution` and `summarize_level` on generated levels."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.loadgen.records import Failure, FinishReason, RequestRecords
from orchestrator.stats import PERCENTILES, distribution, percentile_key, summarize_level

S0 = 5_000_000_000

int_series = st.lists(st.integers(-(10**15), 10**15), min_size=1, max_size=200)
float_series = st.lists(
    st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False), min_size=1, max_size=200
)

# One request: offsets (ns) from the measurement start, then its outcome.
request_row = st.tuples(
    st.integers(0, 10**10),  # issue offset
    st.integers(0, 10**6),  # issue lag (scheduled = issue − lag)
    st.one_of(st.just(-1), st.integers(0, 10**9)),  # first chunk after issue, -1 none
    st.integers(0, 10**9),  # end after max(issue, first)
    st.integers(-1, 4000),  # output tokens
    st.integers(-1, 4000),  # tokens after first
    st.integers(-1, 8000),  # input tokens
    st.one_of(st.just(-1), st.integers(0, 10**8)),  # max gap
    st.sampled_from(list(Failure)),
    st.sampled_from(list(FinishReason)),
)


@st.composite
def levels(draw: st.DrawFn) -> RequestRecords:
    rows = draw(st.lists(request_row, max_size=60))
    issue = [S0 + r[0] for r in rows]
    first = [-1 if r[2] < 0 else i + r[2] for i, r in zip(issue, rows, strict=True)]
    end = [max(i, f) + r[3] for i, f, r in zip(issue, first, rows, strict=True)]
    return RequestRecords.from_columns(
        {
            "worker": [0] * len(rows),
            "scheduled_ns": [i - r[1] for i, r in zip(issue, rows, strict=True)],
            "issue_ns": issue,
            "first_ns": first,
            "first_server_ns": [f - 1000 if f >= 0 else -1 for f in first],
            "end_ns": end,
            "output_tokens": [r[4] for r in rows],
            "tokens_after_first": [r[5] for r in rows],
            "input_tokens": [r[6] for r in rows],
            "chunks": [max(r[4], 0) for r in rows],
            "max_gap_ns": [r[7] for r in rows],
            "p99_gap_ns": [r[7] // 2 if r[7] >= 0 else -1 for r in rows],
            "failure": [int(r[8]) for r in rows],
            "http_status": [200] * len(rows),
            "finish_reason": [int(r[9]) for r in rows],
        }
    )


def _check_distribution(values: list[int] | list[float]) -> None:
    dist = distribution(np.asarray(values))
    assert dist is not None
    observed = set(values)
    ordered = [dist.percentiles[percentile_key(p)] for p in sorted(PERCENTILES)]
    assert all(a <= b for a, b in itertools.pairwise(ordered))  # p up -> value not down
    assert all(v in observed for v in ordered)
    assert dist.min <= dist.median <= dist.max
    assert dist.median == dist.percentiles["50.0"]
    assert dist.min == min(values) and dist.max == max(values)
    assert dist.n == len(values)
    assert dist.std_dev >= 0.0
    spread = abs(dist.max) + abs(dist.min)
    assert dist.min - 1e-12 * spread <= dist.avg <= dist.max + 1e-12 * spread


@given(int_series)
def test_integer_distribution(values: list[int]) -> None:
    _check_distribution(values)
    dist = distribution(values)
    assert dist is not None
    assert dist.total == sum(values) and type(dist.total) is int


@given(float_series)
def test_float_distribution(values: list[float]) -> None:
    _check_distribution(values)


@given(levels(), st.one_of(st.none(), st.integers(1, 512)))
def test_level_invariants(records: RequestRecords, concurrency: int | None) -> None:
    level = summarize_level(records, measurement_start_ns=S0, concurrency=concurrency)
    n = len(records)
    assert level.issued == n == level.completed
    assert level.issued == level.succeeded + level.failed
    assert level.succeeded == int(np.count_nonzero(records.failure == 0))
    assert sum(level.failure_counts.values()) == level.failed
    assert sum(level.finish_reason_counts.values()) == int(np.count_nonzero(records.finish_reason))

    if level.duration_ns > 0:
        assert level.qps is not None and level.success_qps is not None
        assert math.isclose(level.qps * level.duration_s, level.completed, rel_tol=1e-12)
        assert math.isclose(level.success_qps * level.duration_s, level.succeeded, rel_tol=1e-12)
    else:
        assert level.qps is None

    if n:
        assert level.error_rate is not None
        assert 0.0 <= level.error_rate_lower <= level.error_rate <= level.error_rate_upper <= 1.0
        assert level.latency_ns is not None and level.latency_ns.n == n
        assert level.duration_ns >= level.latency_ns.max
    if level.ttft_ns is not None:
        assert level.ttft_ns.n <= level.succeeded
        assert level.ttft_ns.min >= 0
    if level.tpot_ns is not None:
        assert level.tpot_ns.min >= 0.0
    if level.tps_per_user_v07 is not None:
        assert concurrency is not None and level.tps is not None
        assert math.isclose(level.tps_per_user_v07 * concurrency, level.tps, rel_tol=1e-12)
    if level.delivered_concurrency is not None and level.latency_ns is not None:
        assert level.qps is not None
        little = level.qps * level.latency_ns.avg / 1e9
        assert math.isclose(level.delivered_concurrency, little, rel_tol=1e-9)

    json.dumps(level.to_result_summary({"seed": 1}), allow_nan=False)
    # every record with a first chunk carries a server stamp 1 µs earlier (see levels())
    if level.read_delay_ns is not None:
        assert level.read_delay_ns.min == level.read_delay_ns.max == 1000
        assert level.read_delay_ns.n == int(np.count_nonzero(records.first_ns >= 0))
