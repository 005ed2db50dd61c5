"""Accepted points at two systems, built through the ORM from result summaries.

The figures go through the real `point_metrics`, from a summary in the reference client's
format (times in ns, percentile keys "99.0"), so admissibility reads what production reads.
Two systems trade latency for throughput, as the demo's do: `acme/small` answers fast and
saturates early, `globex/large` is slow to the first token and serves far more requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from orchestrator.auth.service import create_organisation
from orchestrator.endpoints.models import ApiFlavour, Endpoint
from orchestrator.runs.metrics import point_metrics
from orchestrator.runs.models import Point, PointState, Run, RunKind, RunState
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System
from orchestrator.workloads.service import sync_workloads

WORKLOAD = "synthetic-chat"
DURATION_S = 10.0


def distribution_ns(p99_ms: float) -> dict[str, Any]:
    """A latency distribution whose p99 is `p99_ms`: p50 = 0.5, p90 = 0.8, p99.9 = 1.2 × p99."""
    ns = p99_ms * 1e6
    return {
        "min": 0.2 * ns,
        "avg": 0.55 * ns,
        "max": 1.3 * ns,
        "percentiles": {"99.9": 1.2 * ns, "99.0": ns, "90.0": 0.8 * ns, "50.0": 0.5 * ns},
    }


def summary(
    *,
    qps: float,
    ttft_p99_ms: float | None,
    tpot_p99_ms: float | None,
    latency_p99_ms: float = 3000.0,
    failed: int = 0,
    input_tokens_per_request: int = 128,
    output_tokens_per_request: int = 64,
) -> dict[str, Any]:
    """A result_summary.json document; `qps` counts completed requests (failed included)."""
    completed = round(qps * DURATION_S)
    return {
        "n_samples_issued": completed,
        "n_samples_completed": completed,
        "n_samples_failed": failed,
        "duration_ns": DURATION_S * 1e9,
        "ttft": distribution_ns(ttft_p99_ms) if ttft_p99_ms is not None else None,
        "tpot": distribution_ns(tpot_p99_ms) if tpot_p99_ms is not None else None,
        "latency": distribution_ns(latency_p99_ms),
        "output_sequence_lengths": {"total": completed * output_tokens_per_request},
        "input_sequence_lengths": {"total": completed * input_tokens_per_request},
    }


@dataclass
class Curve:
    system: System
    submission: Submission
    endpoint: Endpoint
    points: dict[str, Point] = field(default_factory=dict)


def make_system(
    session: Session, *, org: str, name: str, price_per_hour: float | None = None
) -> Curve:
    workload = next(w for w in sync_workloads(session) if w.name == WORKLOAD)
    organisation = create_organisation(session, name=org)
    assert organisation.id is not None and workload.id is not None
    system = System(organisation_id=organisation.id, name=name, price_per_hour=price_per_hour)
    session.add(system)
    session.flush()
    assert system.id is not None
    endpoint = Endpoint(
        organisation_id=organisation.id,
        system_id=system.id,
        base_url="http://127.0.0.1:9/v1",
        api=ApiFlavour.OPENAI_CHAT,
        served_model="m",
    )
    session.add(endpoint)
    session.flush()
    submission = Submission(
        organisation_id=organisation.id,
        system_id=system.id,
        endpoint_id=endpoint.id,
        workload_id=workload.id,
        levels=[1],
    )
    session.add(submission)
    session.flush()
    return Curve(system, submission, endpoint)


def add_point(
    session: Session,
    curve: Curve,
    label: str,
    *,
    concurrency: int,
    state: PointState = PointState.ACCEPTED,
    **figures: Any,
) -> Point:
    sub = curve.submission
    assert sub.id is not None and curve.system.id is not None
    run = Run(
        submission_id=sub.id,
        run_key=f"{sub.id}:{label}",
        kind=RunKind.PERFORMANCE,
        position=len(curve.points),
        level=concurrency,
        state=RunState.FINISHED,
    )
    session.add(run)
    session.flush()
    assert run.id is not None
    point = Point(
        submission_id=sub.id,
        run_id=run.id,
        system_id=curve.system.id,
        workload_id=sub.workload_id,
        concurrency=concurrency,
        state=state,
        metrics=point_metrics(summary(**figures), concurrency),
    )
    session.add(point)
    session.flush()
    curve.points[label] = point
    return point


def two_systems(session: Session) -> tuple[Curve, Curve]:
    """acme/small (fast, saturates early, 2 USD/h) and globex/large (slow, big, 6 USD/h).

    Under `interactive` (TTFT p99 <= 1 s, TPOT p99 <= 50 ms) small wins with 30 QPS at
    concurrency 8 against large's 20; under `batch` (TTFT p99 <= 10 s) large wins with 200
    QPS against small's 60; under `realtime` (TTFT p90 <= 250 ms) large has no point at all.
    A superseded and a candidate point of large would win everything, and must not count.
    """
    small = make_system(session, org="acme", name="small", price_per_hour=2.0)
    add_point(session, small, "c1", concurrency=1, qps=5, ttft_p99_ms=100, tpot_p99_ms=10)
    add_point(session, small, "c8", concurrency=8, qps=30, ttft_p99_ms=300, tpot_p99_ms=20)
    add_point(session, small, "c32", concurrency=32, qps=60, ttft_p99_ms=2500, tpot_p99_ms=60)
    large = make_system(session, org="globex", name="large", price_per_hour=6.0)
    add_point(session, large, "c8", concurrency=8, qps=20, ttft_p99_ms=800, tpot_p99_ms=40)
    add_point(session, large, "c64", concurrency=64, qps=200, ttft_p99_ms=5000, tpot_p99_ms=90)
    old = add_point(
        session,
        large,
        "old-c8",
        concurrency=8,
        state=PointState.SUPERSEDED,
        qps=900,
        ttft_p99_ms=10,
        tpot_p99_ms=1,
    )
    old.superseded_by = large.points["c8"].id
    add_point(
        session,
        large,
        "cand",
        concurrency=4,
        state=PointState.CANDIDATE,
        qps=800,
        ttft_p99_ms=10,
        tpot_p99_ms=1,
    )
    session.flush()
    return small, large
