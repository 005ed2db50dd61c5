"""Every kind of bad answer becomes a classified failure; the run completes; counts add up."""

from __future__ import annotations

from pathlib import Path

import pytest
from _evil_server import evil_server

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

N = 6


def sweep(url: str, out: Path, *, stream: bool = True, **kw: object) -> SweepSpec:
    return SweepSpec(
        endpoint=EndpointSpec(url=url, model="m"),
        dataset=DatasetSpec(synthetic=SyntheticSpec(isl=4, osl=4, prompts=8)),
        levels=[2],
        requests=N,
        stream=stream,
        timeouts=TimeoutSpec(connect_s=2, stall_s=0.5, total_s=10, drain_s=5),
        **kw,  # type: ignore[arg-type]
    )


CASES = [
    ("ok", Failure.NONE),
    ("html", Failure.MALFORMED_STREAM),
    ("json_body", Failure.MALFORMED_STREAM),
    ("truncated", Failure.INCOMPLETE),
    ("no_finish", Failure.INCOMPLETE),
    ("bad_json", Failure.MALFORMED_STREAM),
    ("huge", Failure.MALFORMED_STREAM),
    ("stall", Failure.STALL),
    ("not_http", Failure.MALFORMED_STREAM),
    ("close_at_once", Failure.INCOMPLETE),
    ("empty_200", Failure.EMPTY_RESPONSE),
    ("unauthorized", Failure.HTTP_4XX),
]


@pytest.mark.parametrize(("behaviour", "expected"), CASES, ids=[c[0] for c in CASES])
def test_bad_answers_are_classified(behaviour: str, expected: Failure, tmp_path: Path) -> None:
    with evil_server(behaviour) as url:
        result = run_sweep(sweep(url, tmp_path), tmp_path)
    (level,) = result.levels
    s = level.summary
    assert s.issued == N and s.succeeded + s.failed == s.issued
    if expected is Failure.NONE:
        assert s.succeeded == N, level.failure_examples
        return
    assert s.failure_counts[expected.label] == N, (s.failure_counts, level.failure_examples)
    assert level.failure_examples[expected.label]  # a human-readable reason is kept
    records = RequestRecords.load(level.folder / "records.npz")
    assert len(records) == N and (records.failure == expected).all()
    assert (records.end_ns >= records.issue_ns).all()


def test_connection_refused(tmp_path: Path) -> None:
    with evil_server("ok") as url:
        pass  # the port is closed again: nothing listens there now
    result = run_sweep(sweep(url, tmp_path), tmp_path)
    s = result.levels[0].summary
    assert (s.issued, s.failure_counts["connect"]) == (N, N)
    assert "refused" in result.levels[0].failure_examples["connect"][0].lower()


def test_dead_endpoint_is_not_hammered_for_the_whole_level(tmp_path: Path) -> None:
    with evil_server("ok") as url:
        pass
    spec = sweep(url, tmp_path, give_up_after=20).model_copy(
        update={"requests": None, "min_duration_s": 30.0}
    )
    result = run_sweep(spec, tmp_path)
    level = result.levels[0]
    assert 20 <= level.summary.issued < 200  # stopped after ~20 failures, not 30 s of them
    assert not level.health["valid"]
    assert any("stopped early" in r for r in level.health["reasons"])


def test_tls_verification_switch(tmp_path: Path) -> None:
    import ssl

    import trustme

    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    with evil_server("ok", tls=server_ctx) as url:
        assert url.startswith("https://")
        strict = run_sweep(sweep(url, tmp_path / "strict"), tmp_path / "strict").levels[0]
        spec = sweep(url, tmp_path / "insecure").model_copy(
            update={"endpoint": EndpointSpec(url=url, model="m", verify_tls=False)}
        )
        insecure = run_sweep(spec, tmp_path / "insecure").levels[0]
    assert strict.summary.failure_counts["connect"] == N
    assert "certificate" in strict.failure_examples["connect"][0].lower()
    assert insecure.summary.succeeded == N


def test_total_timeout_and_drain_deadline(tmp_path: Path) -> None:
    from orchestrator.simulator import SimulatorConfig, start_in_thread

    # Tokens keep coming (no stall), but the whole answer takes 64 × 50 ms = 3.2 s.
    slow = SimulatorConfig(ttft_ms=10, tpot_ms=50, output_tokens=64, served_model="m")
    long_answers = DatasetSpec(synthetic=SyntheticSpec(isl=4, osl=64, prompts=8))
    with start_in_thread(slow) as sim:
        spec = sweep(sim.url, tmp_path).model_copy(
            update={
                "dataset": long_answers,
                "timeouts": TimeoutSpec(connect_s=2, stall_s=5, total_s=0.5, drain_s=5),
            }
        )
        lv = run_sweep(spec, tmp_path / "total").levels[0]
        assert lv.summary.failure_counts["timeout"] == N
        assert "total timeout" in lv.failure_examples["timeout"][0]
        # Issuing stops at the request count; the drain deadline then fails what is left.
        spec = sweep(sim.url, tmp_path).model_copy(
            update={
                "dataset": long_answers,
                "timeouts": TimeoutSpec(connect_s=2, stall_s=5, total_s=60, drain_s=0.3),
            }
        )
        lv = run_sweep(spec, tmp_path / "drain").levels[0]
    s = lv.summary
    # the last two (concurrency 2) were in flight when the count was reached
    assert (s.issued, s.succeeded, s.failure_counts["timeout"]) == (N, N - 2, 2)
    assert "drain deadline" in lv.failure_examples["timeout"][0]
    assert lv.health["processes"][0]["drained_by_deadline"] == 2
