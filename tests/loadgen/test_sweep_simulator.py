"""The whole measurement path against the simulator, whose timing is the ground truth.

Tolerances. The simulator (fixed mode) sends the first content token `ttft_ms` after it has
read the request and then one token every `tpot_ms`, on absolute deadlines of a uvloop event
loop, whose timers have millisecond resolution and fire late, never early. Between its clock
and ours lie a loopback write and read (tens of µs) and the event-loop delays of two
processes that share this machine's two cores with the test runner. So a TTFT p50 may exceed
the truth by up to ~1 ms of timer rounding plus scheduling noise, never undercut it by more
than clock granularity; we accept [truth − 0.5 ms, truth + 3 ms] for medians and + 10 ms for
p99. TPOT averages 31 intervals, so timer rounding shrinks 31-fold: ±0.25 ms (6 %).
QPS follows from Little's law with the requests that actually overlapped: at concurrency c
and latency L, QPS ≈ c / L, lower by the ramp-up and drain tail; we accept 80–102 %.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from orchestrator.loadgen import (
    DatasetSpec,
    EndpointSpec,
    Failure,
    SweepSpec,
    SyntheticSpec,
    TimeoutSpec,
    run_sweep,
)
from orchestrator.loadgen.records import RequestRecords
from orchestrator.simulator import Simulator, SimulatorConfig, start_in_thread

TTFT_MS, TPOT_MS, TOKENS = 40.0, 4.0, 32
LATENCY_MS = TTFT_MS + (TOKENS - 1) * TPOT_MS  # 164 ms: first token, then 31 more


@pytest.fixture(scope="module")
def fixed_sim() -> Iterator[Simulator]:
    config = SimulatorConfig(ttft_ms=TTFT_MS, tpot_ms=TPOT_MS, output_tokens=TOKENS, seed=3)
    with start_in_thread(config) as sim:
        yield sim


def spec_for(url: str, **kw: object) -> SweepSpec:
    base: dict[str, object] = {
        "endpoint": EndpointSpec(url=url, model="sim-model"),
        "dataset": DatasetSpec(synthetic=SyntheticSpec(isl=16, osl=64, prompts=64)),
        "levels": [1],
        "requests": 12,
        "timeouts": TimeoutSpec(connect_s=5, stall_s=5, total_s=30, drain_s=10),
    }
    base.update(kw)
    return SweepSpec.model_validate(base)


def ms(x: float) -> float:
    return x / 1e6


def test_concurrency_sweep_matches_the_configured_truth(
    fixed_sim: Simulator, tmp_path: Path
) -> None:
    spec = spec_for(fixed_sim.url, levels=[1, 8], requests=64, warmup=4)
    result = run_sweep(spec, tmp_path)
    assert [lv.label for lv in result.levels] == ["concurrency-1", "concurrency-8"]
    for lv in result.levels:
        s = lv.summary
        assert (s.issued, s.succeeded, s.failed) == (64, 64, 0), lv.failure_examples
        assert lv.health["valid"], lv.health["reasons"]
        assert s.ttft_ns is not None and s.tpot_ns is not None and s.latency_ns is not None
        assert TTFT_MS - 0.5 <= ms(s.ttft_ns.median) <= TTFT_MS + 3
        assert ms(s.ttft_ns.percentiles["99.0"]) <= TTFT_MS + 10
        assert abs(ms(s.tpot_ns.median) - TPOT_MS) <= 0.25
        assert LATENCY_MS - 0.5 <= ms(s.latency_ns.median) <= LATENCY_MS + 4
        c = int(lv.level)
        assert s.qps is not None
        assert 0.80 * c / (LATENCY_MS / 1000) <= s.qps <= 1.02 * c / (LATENCY_MS / 1000)
        assert s.output_sequence_lengths is not None
        assert s.output_sequence_lengths.total == 64 * TOKENS
        assert s.tps == pytest.approx(64 * TOKENS / s.duration_s)
        assert s.finish_reason_counts["stop"] == 64
        # the client itself stayed out of the way
        for proc in lv.health["processes"]:
            assert proc["loop_lag_p99_ms"] < 5
    # the files are what the summary says
    doc = json.loads(
        (tmp_path / "concurrency-8" / "performance" / "result_summary.json").read_text()
    )
    assert doc["n_samples_issued"] == 64 and doc["n_samples_failed"] == 0
    assert doc["run_config"]["load_pattern"] == {
        "type": "concurrency",
        "target_qps": None,
        "target_concurrency": 8,
    }
    assert set(doc["ttft"]["percentiles"]) >= {"99.9", "99.0", "50.0", "1.0"}
    assert doc["rollbench"]["token_counting"] == "usage"
    sweep = json.loads((tmp_path / "sweep_summary.json").read_text())
    assert [row["level"] for row in sweep["levels"]] == [1, 8]
    records = RequestRecords.load(tmp_path / "concurrency-8" / "records.npz")
    assert len(records) == 64 and (records.failure == Failure.NONE).all()
    # closed loop: never more than 8 in flight
    events = sorted(
        [(int(t), 1) for t in records.issue_ns] + [(int(t), -1) for t in records.end_ns],
        key=lambda e: (e[0], e[1]),
    )
    assert max(np.cumsum([d for _, d in events])) <= 8


def test_two_client_processes_share_a_level(fixed_sim: Simulator, tmp_path: Path) -> None:
    result = run_sweep(spec_for(fixed_sim.url, levels=[6], requests=30, workers=2), tmp_path)
    records = RequestRecords.load(result.levels[0].folder / "records.npz")
    assert len(records) == 30 and (records.failure == Failure.NONE).all()
    assert sorted(set(records.worker.tolist())) == [0, 1]
    assert np.bincount(records.worker).tolist() == [15, 15]
    assert len(result.levels[0].health["processes"]) == 2


def test_poisson_holds_its_rate(fixed_sim: Simulator, tmp_path: Path) -> None:
    rate = 40.0
    result = run_sweep(
        spec_for(fixed_sim.url, pattern="poisson", levels=[rate], requests=160), tmp_path
    )
    lv = result.levels[0]
    s = lv.summary
    assert s.succeeded == 160
    # 160 seeded exponential gaps: the span has a 1σ spread of 1/sqrt(160) ≈ 8 %
    assert s.qps is not None and 0.7 * rate <= s.qps <= 1.3 * rate
    assert s.issue_lag_ns is not None
    assert ms(s.issue_lag_ns.percentiles["99.0"]) < 5  # sent when scheduled
    assert lv.health["valid"], lv.health["reasons"]
    doc = json.loads((lv.folder / "performance" / "result_summary.json").read_text())
    assert doc["run_config"]["load_pattern"]["target_qps"] == rate


def test_offline_sends_everything_at_once(fixed_sim: Simulator, tmp_path: Path) -> None:
    result = run_sweep(spec_for(fixed_sim.url, pattern="offline", levels=[24]), tmp_path)
    records = RequestRecords.load(result.levels[0].folder / "records.npz")
    assert len(records) == 24 and (records.failure == Failure.NONE).all()
    spread_ms = (records.issue_ns.max() - records.issue_ns.min()) / 1e6
    assert spread_ms < 20  # all issued together, not one after another (each takes 164 ms)


def test_min_duration_stops_the_level(fixed_sim: Simulator, tmp_path: Path) -> None:
    t0 = time.monotonic()
    result = run_sweep(
        spec_for(fixed_sim.url, levels=[4], requests=None, min_duration_s=1.0), tmp_path
    )
    elapsed = time.monotonic() - t0
    s = result.levels[0].summary
    assert s.duration_s >= 1.0 and elapsed < 10
    assert s.failed == 0 and s.issued >= 4 * int(1.0 / (LATENCY_MS / 1000))


@pytest.mark.parametrize("api", ["chat", "completions"])
@pytest.mark.parametrize("stream", [True, False])
def test_apis_and_non_streaming(
    fixed_sim: Simulator, tmp_path: Path, api: str, stream: bool
) -> None:
    spec = spec_for(
        fixed_sim.url,
        stream=stream,
        requests=4,
        endpoint=EndpointSpec(url=fixed_sim.url, model="sim-model", api=api),  # type: ignore[arg-type]
    )
    s = run_sweep(spec, tmp_path).levels[0].summary
    assert s.succeeded == 4
    assert s.output_sequence_lengths is not None and s.output_sequence_lengths.min == TOKENS
    if stream:
        assert s.ttft_ns is not None and s.tpot_ns is not None
    else:
        assert s.ttft_ns is None and s.tpot_ns is None  # undefined without a stream


def test_grouped_tokens_and_reasoning(tmp_path: Path) -> None:
    # 4 tokens per event (like stream_interval=4), the first 8 of them reasoning tokens: TTFT
    # is the first reasoning event, sent when its 4th token is due (30 + 3 × 3 = 39 ms); TPOT
    # stays per token; the gaps show the 4-token bursts.
    config = SimulatorConfig(
        ttft_ms=30, tpot_ms=3, output_tokens=32, tokens_per_chunk=4, reasoning_tokens=8
    )
    with start_in_thread(config) as sim:
        lv = run_sweep(spec_for(sim.url, requests=6), tmp_path).levels[0]
    s = lv.summary
    assert s.succeeded == 6
    assert s.ttft_ns is not None and s.tpot_ns is not None and s.max_gap_ns is not None
    records = RequestRecords.load(lv.folder / "records.npz")
    assert 38.5 <= ms(s.ttft_ns.median) <= 42
    assert abs(ms(s.tpot_ns.median) - 3.0) <= 0.3
    assert 11 <= ms(s.max_gap_ns.median) <= 15  # one event every 4 × 3 ms
    assert set(records.chunks.tolist()) == {(32 + 8) // 4}


def test_tokenizer_counts_tokens(fixed_sim: Simulator, tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "tok": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    result = run_sweep(spec_for(fixed_sim.url, requests=4, tokenizer=path), tmp_path / "out")
    lv = result.levels[0]
    assert result.token_counting == "tokenizer"
    assert lv.health["token_sources"] == {"tokenizer": 4}
    s = lv.summary
    assert s.output_sequence_lengths is not None
    assert s.output_sequence_lengths.min == s.output_sequence_lengths.max == TOKENS
    # "[i] w w …": 15 words after the marker, which Whitespace splits into "[", "i", "]"
    assert s.input_sequence_lengths is not None
    assert s.input_sequence_lengths.min == s.input_sequence_lengths.max == 15 + 3


def test_simulator_faults_are_classified(tmp_path: Path) -> None:
    config = SimulatorConfig(
        ttft_ms=5,
        tpot_ms=1,
        output_tokens=8,
        error_rate=0.2,
        malformed_rate=0.1,
        drop_rate=0.1,
        stall_rate=0.1,
        stall_s=30,
        seed=11,
    )
    with start_in_thread(config) as sim:
        spec = spec_for(
            sim.url,
            levels=[4],
            requests=80,
            timeouts=TimeoutSpec(connect_s=5, stall_s=0.3, total_s=30, drain_s=10),
        )
        lv = run_sweep(spec, tmp_path).levels[0]
    s = lv.summary
    counts = {k: v for k, v in s.failure_counts.items() if v}
    assert s.issued == 80 and s.succeeded + s.failed == 80
    assert set(counts) == {"http_5xx", "malformed_stream", "incomplete", "stall"}, counts
    # the simulator draws each fault with its rate: 80 requests, 50 % faulty in all
    assert 20 <= s.failed <= 60


def test_auth_model_and_queue_errors(tmp_path: Path) -> None:
    with start_in_thread(SimulatorConfig(ttft_ms=1, tpot_ms=1, api_key="s3cret")) as sim:
        wrong = run_sweep(spec_for(sim.url, requests=3), tmp_path / "a").levels[0]
        right = run_sweep(
            spec_for(sim.url, requests=3).model_copy(
                update={"endpoint": EndpointSpec(url=sim.url, model="sim-model", api_key="s3cret")}
            ),
            tmp_path / "b",
        ).levels[0]
        bad_model = run_sweep(
            spec_for(sim.url, requests=3).model_copy(
                update={"endpoint": EndpointSpec(url=sim.url, model="nope", api_key="s3cret")}
            ),
            tmp_path / "c",
        ).levels[0]
    assert wrong.summary.failure_counts["http_4xx"] == 3
    assert "401" in wrong.failure_examples["http_4xx"][0]
    assert right.summary.succeeded == 3
    assert bad_model.summary.failure_counts["http_4xx"] == 3
    assert "404" in bad_model.failure_examples["http_4xx"][0]
    config = SimulatorConfig(mode="batching", max_batch=2, queue_limit=2, decode_step_ms=20)
    with start_in_thread(config) as sim:
        lv = run_sweep(spec_for(sim.url, levels=[16], requests=32), tmp_path / "d").levels[0]
    assert lv.summary.failure_counts["http_429"] > 0
    assert lv.summary.succeeded > 0


def test_endpoint_going_away_mid_run(tmp_path: Path) -> None:
    import threading

    config = SimulatorConfig(ttft_ms=20, tpot_ms=2, output_tokens=16)
    sim_cm = start_in_thread(config)
    sim = sim_cm.__enter__()
    threading.Timer(0.8, lambda: sim_cm.__exit__(None, None, None)).start()
    spec = spec_for(sim.url, levels=[4], requests=None, min_duration_s=2.0, give_up_after=None)
    lv = run_sweep(spec, tmp_path).levels[0]
    s = lv.summary
    assert s.succeeded > 0 and s.failure_counts["connect"] > 0
    assert s.issued == s.succeeded + s.failed


def test_stop_requested_from_outside_holds_even_before_the_level_starts(
    fixed_sim: Simulator, tmp_path: Path
) -> None:
    # A stop that arrives between a level's warm-up and its start (a cancelled submission)
    # must not be forgotten when the level starts.
    spec = spec_for(fixed_sim.url, levels=[2, 4], requests=None, min_duration_s=60.0, warmup=2)
    calls = iter([False])  # the sweep's own check before level 1 passes; then: stop

    t0 = time.monotonic()
    result = run_sweep(spec, tmp_path, stop_requested=lambda: next(calls, True))
    assert time.monotonic() - t0 < 10
    assert result.interrupted and len(result.levels) == 1
    assert not result.levels[0].health["valid"]
    assert run_sweep(spec, tmp_path / "b", stop_requested=lambda: True).levels == []


def test_result_files_keep_no_credentials(fixed_sim: Simulator, tmp_path: Path) -> None:
    """Header values (an `X-Api-Key`, a cookie) and the API key never reach the run folder."""
    endpoint = EndpointSpec(
        url=fixed_sim.url, model="sim-model", api_key="key-123", headers={"X-Api-Key": "hdr-456"}
    )
    result = run_sweep(spec_for(fixed_sim.url, requests=2, endpoint=endpoint), tmp_path)
    assert result.levels[0].summary.succeeded == 2
    written = [p for p in tmp_path.rglob("*.json")]
    assert len(written) >= 2  # result_summary.json and sweep_summary.json
    for path in written:
        text = path.read_text()
        assert "key-123" not in text and "hdr-456" not in text, path
    doc = json.loads((result.levels[0].folder / "performance" / "result_summary.json").read_text())
    assert doc["rollbench"]["spec"]["endpoint"]["headers"] == {"X-Api-Key": "<redacted>"}
