"""Ranking by admissible throughput on both stores: the SLO decides who wins.

The issue's "done when": at a tight SLO and a loose one the ranking changes as the SLO says
it should. Two systems built so that the fast one wins under `interactive`, the big one
under `batch`, and the big one has no admissible point at all under `realtime`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slo.slo_world import add_point, make_system, two_systems
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from orchestrator import migrate
from orchestrator.audit.models import AuditEntry
from orchestrator.db import make_engine
from orchestrator.errors import NotFound
from orchestrator.slo.models import SloProfile
from orchestrator.slo.ranking import rank
from orchestrator.slo.service import get_profile, list_profiles, sync_profiles


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as session:
        yield session


def test_the_winner_changes_with_the_slo(session: Session) -> None:
    small, large = two_systems(session)
    interactive = rank(session, workload_name="synthetic-chat", slo_name="interactive")
    assert [r.system for r in interactive] == ["acme/small", "globex/large"]
    first, second = interactive.rows
    assert first.best_qps == pytest.approx(30) and first.best_qps_concurrency == 8
    assert first.best_qps_point_id == small.points["c8"].id
    assert (first.points, first.admissible_points) == (3, 2)
    assert (
        second.best_qps == pytest.approx(20) and second.best_qps_point_id == large.points["c8"].id
    )
    # live accepted points only: the superseded and the candidate point (900, 800 QPS) do not count
    assert second.points == 2

    batch = rank(session, workload_name="synthetic-chat", slo_name="batch")
    assert [r.system for r in batch] == ["globex/large", "acme/small"]
    assert batch.rows[0].best_qps == pytest.approx(200) and batch.rows[0].best_qps_concurrency == 64
    assert batch.rows[1].best_qps == pytest.approx(60)


def test_a_system_without_an_admissible_point_comes_last_with_the_reason(session: Session) -> None:
    two_systems(session)
    realtime = rank(session, workload_name="synthetic-chat", slo_name="realtime")
    assert [r.system for r in realtime] == ["acme/small", "globex/large"]
    last = realtime.rows[1]
    assert last.admissible_points == 0 and last.best_qps is None and last.cost is None
    assert "every point exceeds TTFT p90 250 ms" in last.reason
    assert "every point exceeds TPOT p90 20 ms" in last.reason
    assert realtime.rows[0].reason == ""


def test_tps_is_ranked_separately_and_quality_is_said(session: Session) -> None:
    small, _ = two_systems(session)
    # a point with fewer requests but longer answers: the most TPS, not the most QPS
    add_point(
        session,
        small,
        "long",
        concurrency=4,
        qps=10,
        ttft_p99_ms=200,
        tpot_p99_ms=15,
        output_tokens_per_request=512,
    )
    row = rank(session, workload_name="synthetic-chat", slo_name="interactive").rows[0]
    assert row.best_qps_point_id == small.points["c8"].id
    assert row.best_tps_point_id == small.points["long"].id
    assert row.best_tps == pytest.approx(10 * 512)
    ranking = rank(session, workload_name="synthetic-chat", slo_name="interactive")
    assert ranking.quality == "not measured"
    assert ranking.quality_note == "quality: not measured (workload has no accuracy suite)"


def test_cost_band_at_the_best_point(session: Session) -> None:
    two_systems(session)
    rows = rank(session, workload_name="synthetic-chat", slo_name="interactive").rows
    cost = rows[0].cost
    assert cost is not None and cost.admissible and cost.reason == ""
    (band,) = cost.bands
    # 2 USD/h at 30 successful req/s over 0.6–0.9 of it; 64 output tokens per request
    assert band.currency == "USD" and band.basis == "hourly"
    assert band.per_request_low == pytest.approx(2 / (3600 * 30 * 0.9))
    assert band.per_request_high == pytest.approx(2 / (3600 * 30 * 0.6))
    assert band.per_mtok_output_high == pytest.approx(2 / (3600 * 30 * 0.6) / 64 * 1e6)


def test_an_unpriced_system_is_ranked_without_cost(session: Session) -> None:
    free = make_system(session, org="initech", name="free")
    add_point(session, free, "c1", concurrency=1, qps=3, ttft_p99_ms=100, tpot_p99_ms=10)
    (row,) = rank(session, workload_name="synthetic-chat", slo_name="interactive").rows
    assert row.best_qps == pytest.approx(3)
    assert row.cost is not None and row.cost.bands == () and "not priced" in row.cost.reason


def test_default_slo_and_unknown_names(session: Session) -> None:
    two_systems(session)
    assert rank(session, workload_name="synthetic-chat").slo == "interactive"
    with pytest.raises(NotFound) as info:
        rank(session, workload_name="synthetic-chat", slo_name="nope")
    assert info.value.field == "slo"
    with pytest.raises(NotFound) as info:
        rank(session, workload_name="no-such-workload", slo_name="interactive")
    assert info.value.field == "workload"


def test_no_points_no_rows(session: Session) -> None:
    make_system(session, org="acme", name="idle")
    assert len(rank(session, workload_name="synthetic-chat", slo_name="batch")) == 0


def test_profiles_sync_once_and_the_file_stays_authoritative_until_replaced(
    session: Session, tmp_path: object
) -> None:
    names = [p.name for p in list_profiles(session)]
    assert names == ["batch", "interactive", "realtime"]
    session.commit()
    created = session.exec(select(AuditEntry).where(AuditEntry.object_type == "slo_profile")).all()
    assert len(created) == 3 and {e.action for e in created} == {"create"}
    list_profiles(session)  # unchanged files: no write, no audit
    session.commit()
    again = session.exec(select(AuditEntry).where(AuditEntry.object_type == "slo_profile")).all()
    assert len(again) == 3
    profile = get_profile(session, name="interactive")
    assert profile.source == "configs/slo/interactive.yaml"
    # the stored copy drifted from its file: the file wins on the next read
    profile.limits = {"error_rate": 0.5}
    session.add(profile)
    session.commit()
    assert get_profile(session, name="interactive").limits["ttft_ms"]["max"] == 1000


def test_sync_reads_another_directory(session: Session, tmp_path: object) -> None:
    from pathlib import Path

    directory = Path(str(tmp_path))
    (directory / "tight.yaml").write_text(
        "name: tight\ndescription: t\nlimits:\n  ttft_ms: {percentile: 99.9, max: 100}\n"
    )
    sync_profiles(session, directory)
    row = session.exec(select(SloProfile).where(SloProfile.name == "tight")).one()
    assert row.limits == {"ttft_ms": {"percentile": 99.9, "max": 100.0}}


def test_why_none_when_different_limits_bite_at_different_points() -> None:
    from slo.slo_world import summary

    from orchestrator.runs.metrics import point_metrics
    from orchestrator.slo.admissibility import evaluate
    from orchestrator.slo.ranking import why_none
    from orchestrator.slo.schemas import SloLimits

    limits = SloLimits.model_validate(
        {"ttft_ms": {"percentile": 99, "max": 1000}, "tpot_ms": {"percentile": 99, "max": 50}}
    )
    slow_start = point_metrics(summary(qps=5, ttft_p99_ms=2000, tpot_p99_ms=10), 1)
    no_stream = point_metrics(summary(qps=5, ttft_p99_ms=100, tpot_p99_ms=None), 1)
    verdicts = [evaluate(slow_start, limits), evaluate(no_stream, limits, quality="failed")]
    assert why_none(verdicts, limits) == (
        "no point meets every limit: TTFT p99 1000 ms exceeded at 1 of 2; "
        "quality failed at 1 of 2; TPOT p99 not measured at 1 of 2"
    )
    both = [evaluate(no_stream, limits), evaluate(no_stream, limits)]
    assert why_none(both, limits) == "TPOT p99 is not measured at any point"
