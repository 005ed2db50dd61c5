"""The review workflow (DESIGN §8): checked submissions wait for an operator's decision.

A measured submission enters review once checked (`orchestrator.review.entry`); operators
see the queue, the longest waiting first (`queue`), and read a submission as a reviewer sees
it — points, findings, thread and its curve (`get_review`) — then accept or reject its
candidate points (`orchestrator.review.decisions`); the submitter answers in the thread and
operators comment or set the MLPerf publication status (`orchestrator.review.thread`). Who
may do what is `orchestrator.review.access`. This module is the reading side, and re-exports
the actions that the API router and the tests use from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from orchestrator.audit.models import AuditEntry
from orchestrator.errors import Conflict, Forbidden
from orchestrator.frontier.models import FrontierVersion
from orchestrator.frontier.service import check_window, current
from orchestrator.review.access import (
    LocalOperator,
    Reviewer,
    point_id_of,
    points_of,
    readable_submission,
    submission_id_of,
)
from orchestrator.review.decisions import PointDecision, accept_all, decide, reject_all
from orchestrator.review.entry import enter_review, recheck
from orchestrator.review.findings import blocking_checks
from orchestrator.review.models import ReviewEntry
from orchestrator.review.thread import reply, set_publication, thread_of
from orchestrator.runs.models import Point, PointState
from orchestrator.submissions.models import Submission, SubmissionState
from orchestrator.submissions.schemas import summarise
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "LocalOperator",
    "PointDecision",
    "QueueItem",
    "ReviewView",
    "accept_all",
    "decide",
    "enter_review",
    "get_review",
    "queue",
    "recheck",
    "reject_all",
    "reply",
    "set_publication",
]


@dataclass(frozen=True)
class QueueItem:
    submission: Submission
    system: str
    workload: str
    points: int
    undecided: int
    blocking: int
    warnings: int
    waiting_since: datetime | None


def queue(
    session: Session, *, principal: Reviewer, limit: int = 50, offset: int = 0
) -> tuple[list[QueueItem], int]:
    """Submissions awaiting a decision, the longest waiting first (operators only)."""
    if not principal.is_operator:
        raise Forbidden("only operators see the review queue")
    entered = (
        select(
            col(AuditEntry.object_id).label("submission_id"),
            func.max(AuditEntry.at).label("since"),
        )
        .where(
            col(AuditEntry.object_type) == "submission",
            col(AuditEntry.to_state) == SubmissionState.IN_REVIEW.value,
        )
        .group_by(col(AuditEntry.object_id))
        .subquery()
    )
    waiting = (
        select(func.count())
        .select_from(Submission)
        .where(col(Submission.state) == SubmissionState.IN_REVIEW)
    )
    total = int(session.exec(waiting).one())
    rows = session.exec(
        select(Submission, entered.c.since)
        .outerjoin(entered, entered.c.submission_id == col(Submission.id))
        .where(col(Submission.state) == SubmissionState.IN_REVIEW)
        .order_by(func.coalesce(entered.c.since, col(Submission.updated_at)), col(Submission.id))
        .offset(offset)
        .limit(limit)
    ).all()
    ids = [submission_id_of(sub) for sub, _ in rows]
    systems = {
        s.id: s.name
        for s in session.exec(
            select(System).where(col(System.id).in_({sub.system_id for sub, _ in rows}))
        )
    }
    workloads = {
        w.id: f"{w.name} v{w.version}"
        for w in session.exec(
            select(Workload).where(col(Workload.id).in_({sub.workload_id for sub, _ in rows}))
        )
    }
    counts: dict[tuple[int, str], int] = {}
    if ids:
        for submission_id, state, n in session.exec(
            select(col(Point.submission_id), col(Point.state), func.count())
            .where(col(Point.submission_id).in_(ids))
            .group_by(col(Point.submission_id), col(Point.state))
        ).all():
            counts[(submission_id, str(state))] = int(n)
    items = []
    for sub, since in rows:
        sid = submission_id_of(sub)
        summary = summarise(sub.findings or [])
        items.append(
            QueueItem(
                submission=sub,
                system=systems.get(sub.system_id, "?"),
                workload=workloads.get(sub.workload_id, "?"),
                points=sum(n for (s, _), n in counts.items() if s == sid),
                undecided=counts.get((sid, PointState.CANDIDATE.value), 0),
                blocking=summary["blocking"],
                warnings=summary["warnings"],
                waiting_since=since,
            )
        )
    return items, total


@dataclass(frozen=True)
class ReviewView:
    submission: Submission
    points: list[Point]
    findings: list[dict[str, Any]]
    blocking_by_point: dict[int, list[str]]
    thread: list[ReviewEntry]
    frontier: FrontierVersion | None
    window_open: bool
    window_message: str


def get_review(session: Session, *, principal: Reviewer, submission_id: int) -> ReviewView:
    """A submission as a reviewer sees it: points, findings, thread and its curve."""
    sub = readable_submission(session, principal, submission_id)
    points = points_of(session, submission_id)
    findings = list(sub.findings or [])
    latest = current(session, system_id=sub.system_id, workload_id=sub.workload_id)
    window_open, window_message = True, ""
    try:
        check_window(
            session,
            system_id=sub.system_id,
            workload_id=sub.workload_id,
            submission_id=submission_id,
        )
    except Conflict as exc:
        window_open, window_message = False, exc.message
    return ReviewView(
        submission=sub,
        points=points,
        findings=findings,
        blocking_by_point={
            point_id_of(p): blocking_checks(findings, point_id_of(p)) for p in points
        },
        thread=thread_of(session, submission_id),
        frontier=latest,
        window_open=window_open,
        window_message=window_message,
    )
