"""Deciding (DESIGN §8): an operator accepts or rejects a submission's candidate points.

An operator accepts or rejects each candidate point (`decide`, `accept_all`, `reject_all`)
with a comment; a point with a *blocking* finding (failed, severity error) about itself or
about the whole submission cannot be accepted, and a curve whose update window closed takes
no new points. Accepted points join the frontier (one new frontier version per call). When
the last candidate is decided the submission is ACCEPTED (some point accepted) or REJECTED
(none) and `submission.decided` is queued. This module is the only place that moves a
measured submission's points to ACCEPTED or REJECTED.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlmodel import Session

from orchestrator.audit.service import record
from orchestrator.db import utcnow
from orchestrator.errors import Conflict, Forbidden, Invalid, NotFound
from orchestrator.frontier.models import FrontierVersion
from orchestrator.frontier.service import apply_change, check_window
from orchestrator.review import webhooks
from orchestrator.review.access import (
    CLOSED,
    DECIDED,
    Reviewer,
    candidates_of,
    point_id_of,
    points_of,
    readable_submission,
    submission_id_of,
)
from orchestrator.review.events import outcome, subject
from orchestrator.review.findings import blocking_checks
from orchestrator.review.models import ReviewAction
from orchestrator.review.thread import add_entry, clean_comment, transition
from orchestrator.runs.models import Point, PointState
from orchestrator.stats.jsontypes import JsonValue
from orchestrator.submissions.models import Submission, SubmissionState

__all__ = ["PointDecision", "accept_all", "decide", "reject_all"]

# A point that was accepted stays "accepted" for its submission's outcome even once a newer
# point at the same concurrency superseded it.
WAS_ACCEPTED = (PointState.ACCEPTED, PointState.SUPERSEDED)


class PointDecision(NamedTuple):
    point_id: int
    decision: str  # "accept" | "reject"
    comment: str = ""


def decide(
    session: Session,
    *,
    principal: Reviewer,
    submission_id: int,
    decisions: Sequence[PointDecision | tuple[int, str, str]],
    comment: str = "",
    now: datetime | None = None,
) -> Submission:
    """Accept or reject candidate points of a submission in review (operators only).

    Everything is validated before anything changes: an unknown point, a point of another
    submission, a decided point, a rejection without a comment, a blocking finding or a
    closed update window refuses the whole call.
    """
    now = now or utcnow()
    sub = readable_submission(session, principal, submission_id, lock=True)
    if not principal.is_operator:
        raise Forbidden("only operators decide on submissions")
    _decidable(sub)
    comment = clean_comment(comment, "comment")
    if not decisions:
        raise Invalid("give at least one decision", field="decisions")
    findings = list(sub.findings or [])
    chosen: list[tuple[Point, str, str]] = []
    seen: set[int] = set()
    for i, raw in enumerate(decisions):
        decision = PointDecision(*raw)
        where = f"decisions[{i}]"
        if decision.decision not in ("accept", "reject"):
            raise Invalid("must be accept or reject", field=f"{where}.decision")
        point = session.get(Point, decision.point_id)
        if point is None:
            raise NotFound(f"no point {decision.point_id}", field=f"{where}.point_id")
        if point.submission_id != submission_id:
            raise Invalid(
                f"point {decision.point_id} belongs to submission {point.submission_id}, "
                f"not {submission_id}",
                field=f"{where}.point_id",
            )
        if decision.point_id in seen:
            raise Invalid(f"point {decision.point_id} is decided twice", field=f"{where}.point_id")
        seen.add(decision.point_id)
        if point.state is not PointState.CANDIDATE:
            raise Conflict(
                f"point {decision.point_id} is already {point.state}", field=f"{where}.point_id"
            )
        text = clean_comment(decision.comment, f"{where}.comment") or comment
        if decision.decision == "reject" and not text:
            raise Invalid("a rejection needs a comment saying why", field=f"{where}.comment")
        if decision.decision == "accept":
            blocked = blocking_checks(findings, decision.point_id)
            if blocked:
                raise Conflict(
                    f"point {decision.point_id} cannot be accepted: blocking finding(s) "
                    f"{', '.join(blocked)} (see the findings; fix and re-run the checks, or "
                    "reject it)",
                    field=f"{where}.point_id",
                )
        chosen.append((point, decision.decision, text))
    accepted = [point for point, verdict, _ in chosen if verdict == "accept"]
    if accepted:
        check_window(
            session,
            system_id=sub.system_id,
            workload_id=sub.workload_id,
            submission_id=submission_id,
            now=now,
        )
    for point, verdict, text in chosen:
        _decide_point(session, sub, point, verdict, text, principal.actor, now)
    session.flush()
    version = None
    if accepted:
        version = apply_change(
            session,
            system_id=sub.system_id,
            workload_id=sub.workload_id,
            accepted=accepted,
            actor=principal.actor,
            submission_id=submission_id,
            reason=comment or f"review of submission {submission_id}",
            now=now,
        )
    about = subject(session, sub)
    for point, _, _ in chosen:
        webhooks.enqueue(session, "point.decided", {**about, "point": outcome(point)}, now=now)
    _finish_if_decided(session, sub, principal.actor, now, version)
    return sub


def accept_all(
    session: Session,
    *,
    principal: Reviewer,
    submission_id: int,
    comment: str = "",
    now: datetime | None = None,
) -> Submission:
    """Accept every candidate point (refused as a whole if one of them is blocked)."""
    decisions = _every_candidate(session, principal, submission_id, "accept")
    return decide(
        session,
        principal=principal,
        submission_id=submission_id,
        decisions=decisions,
        comment=comment,
        now=now,
    )


def reject_all(
    session: Session,
    *,
    principal: Reviewer,
    submission_id: int,
    comment: str,
    now: datetime | None = None,
) -> Submission:
    """Reject every candidate point, with one comment saying why."""
    decisions = _every_candidate(session, principal, submission_id, "reject")
    if not comment.strip():
        raise Invalid("a rejection needs a comment saying why", field="comment")
    return decide(
        session,
        principal=principal,
        submission_id=submission_id,
        decisions=decisions,
        comment=comment,
        now=now,
    )


def _every_candidate(
    session: Session, principal: Reviewer, submission_id: int, verdict: str
) -> list[PointDecision]:
    """`verdict` on every candidate point; Conflict when there is none to decide."""
    sub = readable_submission(session, principal, submission_id)
    decisions = [
        PointDecision(point_id_of(p), verdict) for p in candidates_of(session, submission_id)
    ]
    if not decisions:
        _decidable(sub)
        raise Conflict(f"submission {submission_id} has no candidate point", field="decisions")
    return decisions


def _decidable(sub: Submission) -> None:
    if sub.state in CLOSED:
        raise Conflict(f"submission {sub.id} was {sub.state}: nothing to decide", field="state")
    if sub.state in DECIDED:
        raise Conflict(f"submission {sub.id} is already {sub.state}", field="state")
    if sub.state is not SubmissionState.IN_REVIEW:
        raise Conflict(
            f"submission {sub.id} is {sub.state}, not in review (it enters review once "
            "measured and checked)",
            field="state",
        )


def _decide_point(
    session: Session,
    sub: Submission,
    point: Point,
    verdict: str,
    text: str,
    actor: str,
    now: datetime,
) -> None:
    before = point.state
    point.state = PointState.ACCEPTED if verdict == "accept" else PointState.REJECTED
    point.reviewed_by = actor
    point.reviewed_at = now
    point.review_comment = text
    session.add(point)
    action = ReviewAction.ACCEPT if verdict == "accept" else ReviewAction.REJECT
    add_entry(
        session,
        sub,
        action,
        actor,
        text,
        point_id=point_id_of(point),
        data={"concurrency": point.concurrency},
        now=now,
    )
    record(
        session,
        actor=actor,
        organisation_id=sub.organisation_id,
        object_type="point",
        object_id=point_id_of(point),
        action=action.value,
        from_state=before,
        to_state=point.state,
        reason=text[:2000],
        data={"submission_id": submission_id_of(sub), "concurrency": point.concurrency},
    )


def _finish_if_decided(
    session: Session,
    sub: Submission,
    actor: str,
    now: datetime,
    version: FrontierVersion | None,
) -> None:
    points = points_of(session, submission_id_of(sub))
    if any(p.state is PointState.CANDIDATE for p in points):
        return
    to = (
        SubmissionState.ACCEPTED
        if any(p.state in WAS_ACCEPTED for p in points)
        else SubmissionState.REJECTED
    )
    sub.decided_at = now
    transition(session, sub, to, actor, "every point decided")
    payload: dict[str, JsonValue] = {
        **subject(session, sub),
        "decided_at": now.isoformat(),
        "points": [outcome(p) for p in points],
        "frontier_version": None if version is None else version.version,
    }
    webhooks.enqueue(session, "submission.decided", payload, now=now)
