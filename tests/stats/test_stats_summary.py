"""`summarize_level` on a crafted level whose every figure is computed by hand below."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.loadgen.records import Failure, FinishReason, RequestRecords
from orchestrator.stats import (
    FAILURE_CLASSES,
    FINISH_REASONS,
    LevelSummary,
    summarize_level,
)

MS = 1_000_000  # ns
S0 = 10_000 * MS  # measurement start, monotonic ns
REFERENCE_RUN = Path(__file__).parents[1] / "data" / "mlperf-reference-client" / "run_conc16"

# Times in ms after S0. Six requests: A, B, D succeed; C, E, F fail.
#   name sched  issue first  end   out  after  in  max_gap p99_gap failure         finish
ROWS = [
    ("A", 0, 0, 100, 1100, 101, 100, 50, 20, 15, Failure.NONE, FinishReason.STOP),
    ("B", 150, 200, 400, 1400, 201, 200, 70, 30, 25, Failure.NONE, FinishReason.LENGTH),
    ("C", -1, 300, -1, 350, -1, -1, 60, -1, -1, Failure.HTTP_5XX, FinishReason.NONE),
    ("D", 500, 500, 800, 2000, 1, 0, -1, -1, -1, Failure.NONE, FinishReason.STOP),
    ("E", 600, 600, -1, 2500, 0, -1, 40, -1, -1, Failure.EMPTY_RESPONSE, FinishReason.STOP),
    ("F", 700, 700, 900, 1900, 50, 49, 40, 500, 400, Failure.INCOMPLETE, FinishReason.NONE),
]


def _ns(ms: int) -> int:
    return -1 if ms < 0 else S0 + ms * MS


def crafted_records() -> RequestRecords:
    return RequestRecords.from_columns(
        {
            "worker": [0] * len(ROWS),
            "scheduled_ns": [_ns(r[1]) for r in ROWS],
            "issue_ns": [_ns(r[2]) for r in ROWS],
            "first_ns": [_ns(r[3]) for r in ROWS],
            "first_server_ns": [-1] * len(ROWS),  # not a stamping server
            "end_ns": [_ns(r[4]) for r in ROWS],
            "output_tokens": [r[5] for r in ROWS],
            "tokens_after_first": [r[6] for r in ROWS],
            "input_tokens": [r[7] for r in ROWS],
            "chunks": [max(r[5], 0) for r in ROWS],
            "max_gap_ns": [r[8] * MS if r[8] >= 0 else -1 for r in ROWS],
            "p99_gap_ns": [r[9] * MS if r[9] >= 0 else -1 for r in ROWS],
            "failure": [int(r[10]) for r in ROWS],
            "http_status": [500 if r[10] is Failure.HTTP_5XX else 200 for r in ROWS],
            "finish_reason": [int(r[11]) for r in ROWS],
        }
    )


@pytest.fixture(scope="module")
def level() -> LevelSummary:
    return summarize_level(crafted_records(), measurement_start_ns=S0, concurrency=4)


def test_counts_and_rates(level: LevelSummary) -> None:
    assert (level.issued, level.succeeded, level.failed, level.completed) == (6, 3, 3, 6)
    # duration: last end (E, 2500 ms) − start = 2.5 s
    assert level.duration_ns == 2500 * MS
    assert level.duration_s == 2.5
    assert level.qps == pytest.approx(6 / 2.5)  # 2.4, failures included
    assert level.success_qps == pytest.approx(3 / 2.5)  # 1.2
    # output tokens of successes: A 101 + B 201 + D 1 = 303 (F's 50 is a failure's)
    assert level.tps == pytest.approx(303 / 2.5)  # 121.2


def test_ttft_successes_with_a_first_chunk(level: LevelSummary) -> None:
    ttft = level.ttft_ns
    assert ttft is not None
    # A 100, B 400 − 200 = 200, D 800 − 500 = 300 ms; F (failed) and C/E (no chunk) left out
    assert ttft.n == 3
    assert ttft.total == 600 * MS
    assert (ttft.min, ttft.max) == (100 * MS, 300 * MS)
    assert ttft.median == 200 * MS  # sorted index floor(0.5 · 2) = 1
    assert ttft.percentiles["99.9"] == 200 * MS  # floor(1.998) = 1: lower never reaches max
    assert ttft.percentiles["1.0"] == 100 * MS
    assert ttft.avg == 200 * MS
    # population std: sqrt((100² + 0 + 100²) / 3) ms = 81.6497 ms
    assert ttft.std_dev == pytest.approx(81.64965809277261 * MS)


def test_tpot_and_tps_per_user(level: LevelSummary) -> None:
    tpot = level.tpot_ns
    assert tpot is not None
    # A (1100 − 100) / 100 = 10 ms; B (1400 − 400) / 200 = 5 ms; D has 0 tokens after first
    assert tpot.n == 2
    assert tpot.total == pytest.approx(15 * MS)
    assert tpot.percentiles["90.0"] == 5 * MS  # floor(0.9 · 1) = 0 -> the smaller, 5 ms
    assert tpot.percentiles["99.9"] == 5 * MS
    # v1.0: 1000 / tpot_p90_ms = 1000 / 5 = 200; v0.7: tps / concurrency = 121.2 / 4 = 30.3
    assert level.tps_per_user_v1 == pytest.approx(200.0)
    assert level.tps_per_user_v07 == pytest.approx(30.3)


def test_latency_all_and_successes(level: LevelSummary) -> None:
    lat = level.latency_ns
    assert lat is not None
    # A 1100, B 1200, C 50, D 1500, E 1900, F 1200 ms; sum 6950 ms
    assert lat.n == 6
    assert lat.total == 6950 * MS
    assert (lat.min, lat.max) == (50 * MS, 1900 * MS)
    # sorted 50, 1100, 1200, 1200, 1500, 1900; n − 1 = 5
    assert lat.median == 1200 * MS  # floor(2.5) = 2
    assert lat.percentiles["90.0"] == 1500 * MS  # floor(4.5) = 4
    assert lat.percentiles["99.0"] == 1500 * MS  # floor(4.95) = 4
    assert lat.percentiles["10.0"] == 50 * MS  # floor(0.5) = 0
    assert lat.avg == pytest.approx(6950 / 6 * MS)
    ok = level.latency_success_ns
    assert ok is not None
    assert (ok.n, ok.total) == (3, (1100 + 1200 + 1500) * MS)
    # Little: Σ latency / duration = 6950 / 2500 = 2.78 = qps 2.4 × mean 1.158 s
    assert level.delivered_concurrency == pytest.approx(2.78)
    assert level.qps is not None
    assert level.delivered_concurrency == pytest.approx(level.qps * lat.avg / 1e9)


def test_sequence_lengths(level: LevelSummary) -> None:
    osl, isl = level.output_sequence_lengths, level.input_sequence_lengths
    assert osl is not None and isl is not None
    assert (osl.n, osl.total, osl.min, osl.max) == (3, 303, 1, 201)
    # inputs of every request with a known count, failures included (as the reference
    # client counts ISL at issue): A 50, B 70, C 60, E 40, F 40 (D unknown)
    # sorted 40, 40, 50, 60, 70 → median at floor(0.5 · 4) = 2 → 50
    assert (isl.n, isl.total, isl.median) == (5, 260, 50.0)


def test_errors_and_counts(level: LevelSummary) -> None:
    assert level.error_rate == 0.5  # 3 / 6
    # Wilson 95 %, n = 6: half = 1.96 · sqrt(0.25/6 + 3.8415/144) / 1.64024 = 0.3124
    assert round(level.error_rate_lower, 4) == 0.1876
    assert round(level.error_rate_upper, 4) == 0.8124
    assert list(level.failure_counts) == list(FAILURE_CLASSES)
    assert level.failure_counts["http_5xx"] == 1
    assert level.failure_counts["empty_response"] == 1
    assert level.failure_counts["incomplete"] == 1
    assert sum(level.failure_counts.values()) == 3
    # every record that carries a finish reason: A, D, E stop; B length
    assert level.finish_reason_counts == {
        "stop": 3,
        "length": 1,
        "tool_calls": 0,
        "content_filter": 0,
        "function_call": 0,
        "other": 0,
    }
    assert list(level.finish_reason_counts) == list(FINISH_REASONS)


def test_gaps_and_issue_lag(level: LevelSummary) -> None:
    max_gap, p99_gap, lag = level.max_gap_ns, level.p99_gap_ns, level.issue_lag_ns
    assert max_gap is not None and p99_gap is not None and lag is not None
    # every record with >= 2 chunks, failed F included: 20, 30, 500 ms / 15, 25, 400 ms
    assert (max_gap.n, max_gap.total, max_gap.max) == (3, 550 * MS, 500 * MS)
    assert (p99_gap.n, p99_gap.total, p99_gap.median) == (3, 440 * MS, 25 * MS)
    # issue − scheduled: B 50 ms, the others 0; C has no schedule (-1) and is left out
    assert (lag.n, lag.total, lag.max, lag.median) == (5, 50 * MS, 50 * MS, 0.0)


def test_result_summary_layout(level: LevelSummary) -> None:
    run_config = {"load_pattern": {"type": "concurrency", "target_concurrency": 4}}
    doc = level.to_result_summary(run_config)
    assert list(doc) == [
        "version",
        "git_sha",
        "n_samples_issued",
        "n_samples_completed",
        "n_samples_failed",
        "duration_ns",
        "state",
        "complete",
        "ttft",
        "tpot",
        "latency",
        "output_sequence_lengths",
        "input_sequence_lengths",
        "legacy_loadgen_window_duration_ns",
        "qps",
        "tps",
        "finish_reason_counts",
        "run_config",
        "rollbench",
    ]
    text = json.dumps(doc, allow_nan=False)
    back = json.loads(text)
    assert back["n_samples_issued"] == 6
    assert back["n_samples_completed"] == 6
    assert back["n_samples_failed"] == 3
    assert back["state"] == "complete" and back["complete"] is True
    assert back["run_config"] == run_config
    assert back["ttft"]["percentiles"]["50.0"] == 200 * MS
    extra = back["rollbench"]
    assert extra["n_samples_succeeded"] == 3
    assert extra["error_rate"]["value"] == 0.5
    assert extra["tps_per_user"]["v1"]["value"] == pytest.approx(200.0)
    assert "tpot_p90_ms" in extra["tps_per_user"]["v1"]["definition"]
    assert extra["tps_per_user"]["v07"]["value"] == pytest.approx(30.3)
    assert extra["samples"]["ttft"] == 3
    assert extra["latency_success_ns"]["total"] == 3800 * MS


def test_result_summary_copies_run_config(level: LevelSummary) -> None:
    run_config = {"nested": {"seeds": [1, 2]}}
    doc = level.to_result_summary(run_config)
    run_config["nested"]["seeds"].append(3)
    assert doc["run_config"] == {"nested": {"seeds": [1, 2]}}
    with pytest.raises(TypeError):
        level.to_result_summary({"path": Path("x")})


def test_same_keys_as_the_reference_client(level: LevelSummary) -> None:
    reference = json.loads((REFERENCE_RUN / "performance" / "result_summary.json").read_text())
    doc = level.to_result_summary(reference["run_config"])
    # ours adds "rollbench"; test_started_at (always 0 there) is not produced
    assert [k for k in reference if k != "test_started_at"] == [k for k in doc if k != "rollbench"]
    assert doc["run_config"] == reference["run_config"]
    for series in ("ttft", "tpot", "latency", "output_sequence_lengths", "input_sequence_lengths"):
        ours = doc[series]
        assert isinstance(ours, dict)
        theirs = reference[series]
        skipped = ("early_stopping_percentiles", "histogram")
        assert list(ours) == [k for k in theirs if k not in skipped]
        assert list(ours["percentiles"]) == list(theirs["percentiles"])
        for key in ("total", "min", "max"):  # integer series stay integers
            assert type(ours[key]) is type(theirs[key]), (series, key)
    assert list(doc["finish_reason_counts"]) == list(reference["finish_reason_counts"])


def test_empty_level() -> None:
    level = summarize_level(RequestRecords.empty(0), measurement_start_ns=S0, concurrency=1)
    assert (level.issued, level.succeeded, level.failed, level.duration_ns) == (0, 0, 0, 0)
    assert level.qps is None and level.tps is None and level.error_rate is None
    assert (level.error_rate_lower, level.error_rate_upper) == (0.0, 1.0)
    assert level.latency_ns is None and level.ttft_ns is None
    assert level.tps_per_user_v1 is None and level.tps_per_user_v07 is None
    assert set(level.failure_counts.values()) == {0}
    doc = level.to_result_summary({})
    json.dumps(doc, allow_nan=False)
    assert doc["ttft"] is None


def test_all_failed_level_has_zero_tps() -> None:
    records = crafted_records()
    failed = records.select(~records.succeeded)
    level = summarize_level(failed, measurement_start_ns=S0, concurrency=None, target_qps=2.0)
    # C, E, F: last end E at 2500 ms; nothing succeeded, so 0 tokens/s is known
    assert (level.issued, level.failed) == (3, 3)
    assert level.tps == 0.0
    assert level.ttft_ns is None and level.tpot_ns is None
    assert level.tps_per_user_v07 is None  # open loop: no concurrency
    assert level.target_qps == 2.0
    assert level.error_rate == 1.0 and level.error_rate_upper == 1.0


def test_unknown_token_counts_give_unknown_tps() -> None:
    records = crafted_records()
    records.output_tokens[:] = -1
    level = summarize_level(records, measurement_start_ns=S0, concurrency=4)
    assert level.output_sequence_lengths is None
    assert level.tps is None and level.tps_per_user_v07 is None


def test_inconsistent_records_are_rejected() -> None:
    records = crafted_records()
    with pytest.raises(ValueError, match="before measurement_start_ns"):
        summarize_level(records, measurement_start_ns=S0 + 400 * MS, concurrency=4)
    with pytest.raises(ValueError, match="concurrency"):
        summarize_level(records, measurement_start_ns=S0, concurrency=0)
    with pytest.raises(ValueError, match="target_qps"):
        summarize_level(records, measurement_start_ns=S0, concurrency=None, target_qps=0.0)
    backwards = crafted_records()
    backwards.end_ns[0] = backwards.issue_ns[0] - 1
    with pytest.raises(ValueError, match="end before they were issued"):
        summarize_level(backwards, measurement_start_ns=S0, concurrency=4)
    unset = RequestRecords.empty(2)  # every column -1, failure included
    unset.issue_ns[:] = S0
    unset.end_ns[:] = S0 + MS
    with pytest.raises(ValueError, match="unknown failure codes"):
        summarize_level(unset, measurement_start_ns=S0, concurrency=1)
