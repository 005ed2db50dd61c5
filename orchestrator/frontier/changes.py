"""Frontier versions: every accepted change to a (system, workload) curve becomes a version.

`apply_change` is called by whoever accepts points (the review service for measured
submissions, the importer for baseline points) once they are ACCEPTED and flushed: it
supersedes older points at the same concurrency, writes the next version with what was added,
superseded and newly dominated, and audits it — all in the caller's transaction. The
programme's update window freezes a curve some days after its first version (0: right after
its creating submission, as MLPerf v1.0 asks); `check_window` is that check alone, so the
reviewer can refuse before touching any point.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlmodel import Session, col, select

from orchestrator.audit.service import record
from orchestrator.db import utcnow
from orchestrator.errors import Conflict, Invalid, NotFound
from orchestrator.frontier import pareto
from orchestrator.frontier.curves import figures, latest_version, point_id
from orchestrator.frontier.models import FrontierVersion
from orchestrator.programme import programme
from orchestrator.runs.models import Point, PointState
from orchestrator.systems.models import System

__all__ = ["apply_change", "check_window"]


def _first_version(session: Session, system_id: int, workload_id: int) -> FrontierVersion | None:
    return session.exec(
        select(FrontierVersion).where(
            FrontierVersion.system_id == system_id,
            FrontierVersion.workload_id == workload_id,
            FrontierVersion.version == 1,
        )
    ).first()


def check_window(
    session: Session,
    *,
    system_id: int,
    workload_id: int,
    submission_id: int | None,
    now: datetime | None = None,
) -> None:
    """Conflict if the curve's update window closed (and `submission_id` did not create it).

    The window opens with version 1 and lasts `programme().update_window_days`; the
    submission that created version 1 may always complete its own curve, so a window of 0
    days freezes the curve right after it.
    """
    first = _first_version(session, system_id, workload_id)
    if first is None:
        return
    if submission_id is not None and submission_id == first.submission_id:
        return
    days = programme().update_window_days
    closes = first.created_at + timedelta(days=days)
    moment = _aware(now or utcnow())
    if moment > closes:
        raise Conflict(
            f"the frontier of system {system_id} on workload {workload_id} is frozen: its "
            f"update window of {days:g} days closed at {closes.isoformat()} (version 1 was "
            f"created by submission {first.submission_id}); submit on a new workload version",
            field="submission_id",
        )


def _aware(moment: datetime) -> datetime:
    """`moment` in UTC; a naive time is taken to be UTC (as the store does)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _live(session: Session, system_id: int, workload_id: int) -> list[Point]:
    return list(
        session.exec(
            select(Point)
            .where(
                Point.system_id == system_id,
                Point.workload_id == workload_id,
                Point.state == PointState.ACCEPTED,
            )
            .order_by(col(Point.id))
        ).all()
    )


def _default_pareto(points: Sequence[Point]) -> list[int]:
    x, y = pareto.axis(pareto.DEFAULT_X), pareto.axis(pareto.DEFAULT_Y)
    projected, _missing = pareto.project(((point_id(p), figures(p)) for p in points), x, y)
    return sorted(p.id for p in pareto.pareto_set(projected, x, y))


def apply_change(
    session: Session,
    *,
    system_id: int,
    workload_id: int,
    accepted: Sequence[Point],
    actor: str,
    submission_id: int | None = None,
    reason: str = "",
    now: datetime | None = None,
) -> FrontierVersion | None:
    """Merge newly ACCEPTED points into the curve; the new version, or None if none given.

    At each concurrency the newest accepted point (by created_at, then id) stays and the
    others become SUPERSEDED, pointing at it. `dominated` lists the previous version's
    Pareto points that are still live but no longer on the Pareto set.
    """
    if not accepted:
        return None
    for p in accepted:
        if p.system_id != system_id or p.workload_id != workload_id:
            raise Invalid(
                f"point {p.id} belongs to system {p.system_id} / workload {p.workload_id}, "
                f"not to the curve of system {system_id} / workload {workload_id}",
                field="accepted",
            )
        if p.state != PointState.ACCEPTED:
            raise Invalid(f"point {p.id} is {p.state}, not accepted", field="accepted")
    check_window(
        session, system_id=system_id, workload_id=workload_id, submission_id=submission_id, now=now
    )
    system = session.get(System, system_id)
    if system is None:
        raise NotFound(f"no system {system_id}", field="system_id")
    moment = _aware(now or utcnow())
    previous = latest_version(session, system_id, workload_id)

    before = _live(session, system_id, workload_id)
    by_level: dict[int, list[Point]] = {}
    for p in before:
        by_level.setdefault(p.concurrency, []).append(p)
    superseded: list[int] = []
    for level_points in by_level.values():
        if len(level_points) < 2:
            continue
        ordered = sorted(level_points, key=lambda p: (p.created_at, point_id(p)))
        winner = ordered[-1]
        for old in ordered[:-1]:
            old.state = PointState.SUPERSEDED
            old.superseded_by = winner.id
            session.add(old)
            superseded.append(point_id(old))
            record(
                session,
                actor=actor,
                organisation_id=system.organisation_id,
                object_type="point",
                object_id=point_id(old),
                action="supersede",
                from_state=PointState.ACCEPTED.value,
                to_state=PointState.SUPERSEDED.value,
                reason=f"newer accepted point {winner.id} at concurrency {winner.concurrency}",
                data={"superseded_by": winner.id},
            )
    session.flush()

    gone = set(superseded)
    live = [p for p in before if point_id(p) not in gone]
    members = sorted(point_id(p) for p in live)
    front = _default_pareto(live)
    was_front = set(previous.pareto) if previous else set()
    dominated = sorted((was_front & set(members)) - set(front))
    version = FrontierVersion(
        system_id=system_id,
        workload_id=workload_id,
        version=(previous.version + 1) if previous else 1,
        members=members,
        pareto=front,
        added=sorted(point_id(p) for p in accepted),
        superseded=sorted(superseded),
        dominated=dominated,
        submission_id=submission_id,
        actor=actor[:100],
        reason=reason[:2000],
        created_at=moment,
    )
    session.add(version)
    session.flush()
    assert version.id is not None
    record(
        session,
        actor=actor,
        organisation_id=system.organisation_id,
        object_type="frontier_version",
        object_id=version.id,
        action="create",
        to_state=f"v{version.version}",
        reason=reason,
        data={
            "system_id": system_id,
            "workload_id": workload_id,
            "version": version.version,
            "added": list(version.added),
            "superseded": list(version.superseded),
            "dominated": list(version.dominated),
            "submission_id": submission_id,
        },
    )
    return version
