"""Rank systems on one workload by admissible throughput at one SLO.

Admissible throughput of a system = the largest QPS (and, separately, the largest TPS) among
its live accepted points (state accepted; superseded ones are history) that pass the SLO and
the quality gate. Only measured points count: a system that reaches 40 QPS at 1.1 s TTFT and
10 QPS at 0.4 s has 10 QPS of admissible throughput at "TTFT p99 <= 1 s", never an
interpolated figure in between. Systems without an admissible point come last, with why.

QPS is the reference client's figure (completed requests per second), the same one frontiers
plot; cost uses successful requests only (orchestrator.cost.bands).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sqlmodel import Session, col, select

from orchestrator.auth.models import Organisation
from orchestrator.cost.service import PointCost, Pricing, cost_of, pricing_from
from orchestrator.endpoints.models import Endpoint
from orchestrator.programme import ProgrammeRules, programme
from orchestrator.runs.models import Point, PointState
from orchestrator.slo.admissibility import (
    Admissibility,
    evaluate,
    figure,
    limit_label,
    workload_quality,
)
from orchestrator.slo.schemas import LATENCY_LIMITS, SloLimits
from orchestrator.slo.service import get_profile, limits_of
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System
from orchestrator.workloads.service import resolve


@dataclass(frozen=True)
class RankRow:
    system_id: int
    system: str  # organisation/name
    points: int
    admissible_points: int
    best_qps: float | None
    best_qps_point_id: int | None
    best_qps_concurrency: int | None
    best_tps: float | None
    best_tps_point_id: int | None
    best_tps_concurrency: int | None
    cost: PointCost | None  # at the best-QPS point; None when there is none
    reason: str  # why no point is admissible; "" when one is


@dataclass(frozen=True)
class Ranking:
    workload: str
    workload_version: int
    slo: str
    limits: SloLimits
    quality: str
    quality_note: str
    rows: tuple[RankRow, ...]

    def __iter__(self) -> Iterator[RankRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def _name(limits: SloLimits, limit: str) -> str:
    """ "TTFT p99", "error rate"."""
    return limit_label(limit, getattr(limits, limit) if limit in LATENCY_LIMITS else None)


def _threshold_label(limits: SloLimits, limit: str) -> str:
    if limit in LATENCY_LIMITS:
        bound = getattr(limits, limit)
        return f"{limit_label(limit, bound)} {bound.max:g} ms"
    if limit == "error_rate":
        return f"error rate {(limits.error_rate or 0) * 100:g} %"
    return limit


def why_none(verdicts: Sequence[Admissibility], limits: SloLimits) -> str:
    """One sentence on why none of `verdicts` is admissible, naming the limits that bite."""
    total = len(verdicts)
    exceeded: dict[str, int] = {}
    unmeasured: dict[str, int] = {}
    for verdict in verdicts:
        for reason in verdict.failures:
            bucket = unmeasured if reason.passed is None else exceeded
            bucket[reason.limit] = bucket.get(reason.limit, 0) + 1
    everywhere = [
        f"every point exceeds {_threshold_label(limits, k)}"
        for k, n in exceeded.items()
        if n == total and k != "quality"
    ]
    everywhere += [
        f"{_name(limits, k)} is not measured at any point"
        for k, n in unmeasured.items()
        if n == total
    ]
    if exceeded.get("quality") == total:
        everywhere.append("quality failed at every point")
    if everywhere:
        return "; ".join(everywhere)
    parts = [
        f"{_threshold_label(limits, k)} exceeded at {n} of {total}"
        for k, n in exceeded.items()
        if k != "quality"
    ]
    if "quality" in exceeded:
        parts.append(f"quality failed at {exceeded['quality']} of {total}")
    parts += [f"{_name(limits, k)} not measured at {n} of {total}" for k, n in unmeasured.items()]
    return "no point meets every limit: " + "; ".join(parts)


def _best(points: Sequence[Point], key: str) -> Point | None:
    measured = [p for p in points if figure(p.metrics, key) is not None]
    return max(measured, key=lambda p: (figure(p.metrics, key), -p.concurrency), default=None)


def rank(
    session: Session,
    *,
    workload_name: str,
    slo_name: str | None = None,
    workload_version: int | None = None,
    rules: ProgrammeRules | None = None,
) -> Ranking:
    """Systems on `workload_name` (its latest version unless given) by admissible QPS.

    >>> for row in rank(session, workload_name="synthetic-chat", slo_name="interactive"): ...
    """
    rules = rules or programme()
    workload = resolve(session, name=workload_name, version=workload_version)
    profile = get_profile(session, name=slo_name or rules.default_slo)
    limits = limits_of(profile)
    quality, note = workload_quality(workload.definition)
    # one query: each point with what prices it (its system, its submission's endpoint)
    rows = session.exec(
        select(Point, System, Organisation, Endpoint)
        .join(System, col(System.id) == Point.system_id)
        .join(Organisation, col(Organisation.id) == System.organisation_id)
        .join(Submission, col(Submission.id) == Point.submission_id)
        .outerjoin(Endpoint, col(Endpoint.id) == Submission.endpoint_id)
        .where(Point.workload_id == workload.id)
        .where(Point.state == PointState.ACCEPTED)
        .where(col(Point.superseded_by).is_(None))
        .order_by(col(Point.id))
    ).all()
    by_system: dict[int, tuple[str, list[Point]]] = {}
    pricing: dict[int | None, Pricing] = {}
    for point, system, org, endpoint in rows:
        assert system.id is not None
        entry = by_system.setdefault(system.id, (f"{org.name}/{system.name}", []))
        entry[1].append(point)
        pricing[point.id] = pricing_from(system, endpoint)
    ranked: list[RankRow] = []
    for system_id, (label, points) in by_system.items():
        verdicts = [evaluate(p.metrics, limits, quality=quality) for p in points]
        good = [p for p, v in zip(points, verdicts, strict=True) if v.admissible]
        best_qps, best_tps = _best(good, "qps"), _best(good, "tps")
        cost = None
        if best_qps is not None:
            verdict = verdicts[points.index(best_qps)]
            cost = cost_of(
                session,
                point=best_qps,
                slo=profile.name,
                verdict=verdict,
                rules=rules,
                pricing=pricing[best_qps.id],
            )
        ranked.append(
            RankRow(
                system_id=system_id,
                system=label,
                points=len(points),
                admissible_points=len(good),
                best_qps=figure(best_qps.metrics, "qps") if best_qps else None,
                best_qps_point_id=best_qps.id if best_qps else None,
                best_qps_concurrency=best_qps.concurrency if best_qps else None,
                best_tps=figure(best_tps.metrics, "tps") if best_tps else None,
                best_tps_point_id=best_tps.id if best_tps else None,
                best_tps_concurrency=best_tps.concurrency if best_tps else None,
                cost=cost,
                reason="" if good else why_none(verdicts, limits),
            )
        )
    ranked.sort(
        key=lambda r: (
            r.admissible_points == 0,
            r.best_qps is None,
            -(r.best_qps or 0.0),
            -(r.best_tps or 0.0),
            r.system,
        )
    )
    return Ranking(
        workload=workload.name,
        workload_version=workload.version,
        slo=profile.name,
        limits=limits,
        quality=quality,
        quality_note=note,
        rows=tuple(ranked),
    )
