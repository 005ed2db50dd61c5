"""The review workflow (DESIGN §8): checked submissions wait for an operator's decision.

A measured submission enters review as soon as every run is measured (`enter_review`, from
the worker's `finish_if_done`): the automated checker runs, its findings are stored with the
submission, the submission moves to IN_REVIEW and a `submission.review_requested` webhook is
queued — all in one transaction. An operator then accepts or rejects each candidate point
(`decide`) with a comment; a point with a *blocking* finding (failed, severity error) about
itself or about the whole submission cannot be accepted, and a curve whose update window
closed takes no new points. Accepted points join the frontier (one new frontier version per
call). When the last candidate is decided the submission is ACCEPTED (some point accepted)
or REJECTED (none) and `submission.decided` is queued. The submitter answers in the thread
(`reply`); operators comment, set the MLPerf publication status, or re-run the checker.

Every change is audited and written to the submission's thread (ReviewEntry). This module is
the only place that moves a measured submission's points to ACCEPTED or REJECTED.

Callers are `Reviewer`s: an API token's `Principal`, or `LocalOperator` — an operator at the
machine (the CLI), which reads and writes everything and is audited under its actor name.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from sqlalchemy import func
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col, select

from orchestrator.audit.models import AuditEntry
from orchestrator.audit.service import record
from orchestrator.db import utcnow
from orchestrator.errors import Conflict, Forbidden, Invalid, NotFound
from orchestrator.frontier.models import FrontierVersion
from orchestrator.frontier.service import apply_change, check_window
from orchestrator.programme import ProgrammeRules
from orchestrator.review import webhooks
from orchestrator.review.checks import Finding, blocking, run_checks
from orchestrator.review.models import ReviewAction, ReviewEntry
from orchestrator.runs.models import Point, PointState
from orchestrator.stats.jsontypes import JsonValue
from orchestrator.submissions.models import Publication, Submission, SubmissionState
from orchestrator.submissions.schemas import summarise
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "LocalOperator",
    "PointDecision",
    "QueueItem",
    "ReviewView",
    "Reviewer",
    "accept_all",
    "blocking_checks",
    "decide",
    "enter_review",
    "get_review",
    "queue",
    "recheck",
    "reject_all",
    "reply",
    "set_publication",
    "stored_blocking",
    "summary_of",
]

log = logging.getLogger("rollbench.review")

MAX_COMMENT_CHARS = 4000
CLOSED = (SubmissionState.WITHDRAWN, SubmissionState.CANCELLED)
DECIDED = (SubmissionState.ACCEPTED, SubmissionState.REJECTED)
# A point that was accepted stays "accepted" for its submission's outcome even once a newer
# point at the same concurrency superseded it.
WAS_ACCEPTED = (PointState.ACCEPTED, PointState.SUPERSEDED)


class Reviewer(Protocol):
    """Who acts: what the review service asks of a caller (a `Principal` is one)."""

    @property
    def actor(self) -> str: ...

    @property
    def is_operator(self) -> bool: ...

    def can_read(self, organisation_id: int) -> bool: ...

    def can_write(self, organisation_id: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class LocalOperator:
    """An operator at the machine (the CLI): reads and writes everything, audited as `actor`."""

    actor: str = "cli"

    @property
    def is_operator(self) -> bool:
        return True

    def can_read(self, organisation_id: int) -> bool:
        return True

    def can_write(self, organisation_id: int) -> bool:
        return True


class PointDecision(NamedTuple):
    point_id: int
    decision: str  # "accept" | "reject"
    comment: str = ""


# ------------------------------------------------------------------------ entering review


def enter_review(
    session: Session,
    *,
    submission: Submission,
    actor: str = "worker",
    rules: ProgrammeRules | None = None,
    now: datetime | None = None,
) -> bool:
    """Check a MEASURED submission and put it in the operators' queue; True if it entered.

    A submission without a candidate point (a poisson or offline sweep makes none) keeps its
    findings and stays MEASURED: there is nothing to decide.
    """
    now = now or utcnow()
    if submission.state is not SubmissionState.MEASURED:
        return False
    findings = _check(session, submission, rules, now=now)
    if not _candidates(session, _sid(submission)):
        _audit(session, submission, actor, "checked", data={"findings": summary_of(findings)})
        return False
    _transition(session, submission, SubmissionState.IN_REVIEW, actor, "checked; awaiting review")
    _entry(
        session,
        submission,
        ReviewAction.COMMENT,
        actor,
        _checked_sentence(findings),
        data={"findings": summary_of(findings)},
        now=now,
    )
    webhooks.enqueue(
        session, "submission.review_requested", _event(session, submission), rules=rules, now=now
    )
    return True


def _check(
    session: Session, submission: Submission, rules: ProgrammeRules | None, *, now: datetime
) -> list[dict[str, Any]]:
    """Run the checker and store its findings on the submission (also when it breaks)."""
    try:
        found = [f.as_dict() for f in run_checks(session, submission=submission, rules=rules)]
    except SQLAlchemyError:
        raise  # the transaction is broken: let it roll back and be retried
    except Exception as exc:  # a bug in one check must not strand the submission
        log.exception("the checker failed on submission %s", submission.id)
        found = [
            Finding(
                "checker.error",
                "error",
                False,
                f"the automated checker failed ({type(exc).__name__}: {str(exc)[:200]}); "
                "an operator can run it again once it is fixed.",
            ).as_dict()
        ]
    submission.findings = found
    submission.checked_at = now
    session.add(submission)
    return found


def _checked_sentence(findings: Sequence[Mapping[str, Any]]) -> str:
    counts = summarise(findings)
    blocked = sorted({f.check for f in stored_blocking(findings)})
    sentence = (
        f"automated checks: {counts['passed']} passed, {counts['blocking']} blocking, "
        f"{counts['warnings']} warning(s)"
    )
    return sentence + (f" — blocking: {', '.join(blocked)}" if blocked else "")


def summary_of(findings: Sequence[Mapping[str, Any]]) -> dict[str, JsonValue]:
    return dict(summarise(findings))


# ------------------------------------------------------------------------------ reading


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
    ids = [_sid(sub) for sub, _ in rows]
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
        sid = _sid(sub)
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
    sub = _readable(session, principal, submission_id)
    points = _points(session, submission_id)
    findings = list(sub.findings or [])
    latest = session.exec(
        select(FrontierVersion)
        .where(
            FrontierVersion.system_id == sub.system_id,
            FrontierVersion.workload_id == sub.workload_id,
        )
        .order_by(col(FrontierVersion.version).desc())
    ).first()
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
        blocking_by_point={_pid(p): blocking_checks(findings, _pid(p)) for p in points},
        thread=_thread(session, submission_id),
        frontier=latest,
        window_open=window_open,
        window_message=window_message,
    )


def stored_blocking(findings: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """The blocking findings among stored ones (dicts written by `Finding.as_dict`)."""
    names = {f.name for f in dataclasses.fields(Finding)}
    parsed = []
    for doc in findings:
        if not isinstance(doc, Mapping):
            continue
        try:
            parsed.append(Finding(**{k: v for k, v in doc.items() if k in names}))
        except TypeError:  # a stored finding of another shape: not judged, not blocking
            continue
    return blocking(parsed)


def blocking_checks(findings: Sequence[Mapping[str, Any]], point_id: int) -> list[str]:
    """Ids of the blocking findings that stop `point_id` being accepted: its own ones and
    those about the whole submission (point_id None)."""
    return sorted(
        {f.check for f in stored_blocking(findings) if f.point_id is None or f.point_id == point_id}
    )


# ----------------------------------------------------------------------------- deciding


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
    sub = _readable(session, principal, submission_id, lock=True)
    if not principal.is_operator:
        raise Forbidden("only operators decide on submissions")
    _decidable(sub)
    comment = _comment(comment, "comment")
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
        text = _comment(decision.comment, f"{where}.comment") or comment
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
    for point, _, _ in chosen:
        webhooks.enqueue(
            session,
            "point.decided",
            {**_subject(session, sub), "point": _outcome(point)},
            now=now,
        )
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
    sub = _readable(session, principal, submission_id)
    decisions = [PointDecision(_pid(p), "accept") for p in _candidates(session, submission_id)]
    if not decisions:
        _decidable(sub)
        raise Conflict(f"submission {submission_id} has no candidate point", field="decisions")
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
    sub = _readable(session, principal, submission_id)
    decisions = [PointDecision(_pid(p), "reject") for p in _candidates(session, submission_id)]
    if not decisions:
        _decidable(sub)
        raise Conflict(f"submission {submission_id} has no candidate point", field="decisions")
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
    _entry(
        session,
        sub,
        action,
        actor,
        text,
        point_id=_pid(point),
        data={"concurrency": point.concurrency},
        now=now,
    )
    record(
        session,
        actor=actor,
        organisation_id=sub.organisation_id,
        object_type="point",
        object_id=_pid(point),
        action=action.value,
        from_state=before,
        to_state=point.state,
        reason=text[:2000],
        data={"submission_id": _sid(sub), "concurrency": point.concurrency},
    )


def _finish_if_decided(
    session: Session,
    sub: Submission,
    actor: str,
    now: datetime,
    version: FrontierVersion | None,
) -> None:
    points = _points(session, _sid(sub))
    if any(p.state is PointState.CANDIDATE for p in points):
        return
    to = (
        SubmissionState.ACCEPTED
        if any(p.state in WAS_ACCEPTED for p in points)
        else SubmissionState.REJECTED
    )
    sub.decided_at = now
    _transition(session, sub, to, actor, "every point decided")
    payload: dict[str, JsonValue] = {
        **_subject(session, sub),
        "decided_at": now.isoformat(),
        "points": [_outcome(p) for p in points],
        "frontier_version": None if version is None else version.version,
    }
    webhooks.enqueue(session, "submission.decided", payload, now=now)


# ------------------------------------------------------------------- thread and status


def reply(
    session: Session,
    *,
    principal: Reviewer,
    submission_id: int,
    comment: str,
    point_id: int | None = None,
    now: datetime | None = None,
) -> ReviewEntry:
    """Add to the thread: the submitter's reply (own organisation), or an operator's note."""
    sub = _readable(session, principal, submission_id)
    if principal.is_operator:
        action = ReviewAction.COMMENT
    elif principal.can_write(sub.organisation_id):
        action = ReviewAction.REPLY
    else:
        raise Forbidden("this token may not write in that submission's review")
    text = _comment(comment, "comment")
    if not text:
        raise Invalid("must not be empty", field="comment")
    if point_id is not None:
        point = session.get(Point, point_id)
        if point is None or point.submission_id != submission_id:
            raise Invalid(f"no point {point_id} in submission {submission_id}", field="point_id")
    entry = _entry(
        session, sub, action, principal.actor, text, point_id=point_id, now=now or utcnow()
    )
    session.flush()
    assert entry.id is not None
    _audit(
        session,
        sub,
        principal.actor,
        action.value,
        data={"entry_id": entry.id, "point_id": point_id},
    )
    return entry


def set_publication(
    session: Session,
    *,
    principal: Reviewer,
    submission_id: int,
    publication: Publication | str,
    comment: str = "",
    now: datetime | None = None,
) -> Submission:
    """Set the MLPerf publication status (available, preview, rdi) — operators only."""
    sub = _readable(session, principal, submission_id, lock=True)
    if not principal.is_operator:
        raise Forbidden("only operators set the publication status")
    try:
        status = Publication(publication)
    except ValueError:
        allowed = ", ".join(p.value for p in Publication)
        raise Invalid(f"must be one of {allowed}", field="publication") from None
    if sub.state in CLOSED:
        raise Conflict(f"submission {submission_id} was {sub.state}", field="state")
    text = _comment(comment, "comment")
    before = sub.publication
    if before is status:
        return sub
    sub.publication = status
    sub.updated_at = now or utcnow()
    session.add(sub)
    _entry(
        session,
        sub,
        ReviewAction.PUBLICATION,
        principal.actor,
        text,
        data={"from": before.value, "to": status.value},
        now=sub.updated_at,
    )
    record(
        session,
        actor=principal.actor,
        organisation_id=sub.organisation_id,
        object_type="submission",
        object_id=submission_id,
        action="publication",
        from_state=before.value,
        to_state=status.value,
        reason=text[:2000],
    )
    return sub


def recheck(
    session: Session,
    *,
    principal: Reviewer,
    submission_id: int,
    rules: ProgrammeRules | None = None,
    now: datetime | None = None,
) -> Submission:
    """Run the checker again (operators only); a MEASURED submission then enters review.

    Findings of a decided submission are the evidence of its decision: they stay as they are.
    """
    now = now or utcnow()
    sub = _readable(session, principal, submission_id, lock=True)
    if not principal.is_operator:
        raise Forbidden("only operators re-run the checks")
    if sub.state in CLOSED or sub.state in DECIDED:
        raise Conflict(f"submission {submission_id} is {sub.state}: its findings stand")
    if sub.state is SubmissionState.MEASURED:
        enter_review(session, submission=sub, actor=principal.actor, rules=rules, now=now)
        return sub
    before = summary_of(sub.findings or [])
    findings = _check(session, sub, rules, now=now)
    _entry(
        session,
        sub,
        ReviewAction.COMMENT,
        principal.actor,
        "re-run: " + _checked_sentence(findings),
        data={"findings": summary_of(findings), "before": before},
        now=now,
    )
    _audit(
        session,
        sub,
        principal.actor,
        "recheck",
        data={"before": before, "after": summary_of(findings)},
    )
    return sub


# ------------------------------------------------------------------------------ helpers


def _sid(sub: Submission) -> int:
    assert sub.id is not None
    return sub.id


def _pid(point: Point) -> int:
    assert point.id is not None
    return point.id


def _readable(
    session: Session, principal: Reviewer, submission_id: int, *, lock: bool = False
) -> Submission:
    query = select(Submission).where(col(Submission.id) == submission_id)
    if lock:  # PostgreSQL: two operators deciding at once queue up; SQLite serialises writers
        query = query.with_for_update().execution_options(populate_existing=True)
    sub = session.exec(query).first()
    if sub is None or not principal.can_read(sub.organisation_id):
        raise NotFound(f"no submission {submission_id}")
    return sub


def _points(session: Session, submission_id: int) -> list[Point]:
    return list(
        session.exec(
            select(Point)
            .where(col(Point.submission_id) == submission_id)
            .order_by(col(Point.concurrency), col(Point.id))
        ).all()
    )


def _candidates(session: Session, submission_id: int) -> list[Point]:
    return [p for p in _points(session, submission_id) if p.state is PointState.CANDIDATE]


def _thread(session: Session, submission_id: int) -> list[ReviewEntry]:
    return list(
        session.exec(
            select(ReviewEntry)
            .where(col(ReviewEntry.submission_id) == submission_id)
            .order_by(col(ReviewEntry.at), col(ReviewEntry.id))
        ).all()
    )


def _comment(text: str, field: str) -> str:
    if len(text) > MAX_COMMENT_CHARS:
        raise Invalid(f"at most {MAX_COMMENT_CHARS} characters", field=field)
    if "\x00" in text:
        raise Invalid("must not contain NUL characters", field=field)
    return text.strip()


def _entry(
    session: Session,
    sub: Submission,
    action: ReviewAction,
    actor: str,
    comment: str,
    *,
    point_id: int | None = None,
    data: Mapping[str, JsonValue] | None = None,
    now: datetime | None = None,
) -> ReviewEntry:
    entry = ReviewEntry(
        submission_id=_sid(sub),
        point_id=point_id,
        action=action,
        actor=actor[:100],
        comment=comment,
        data=dict(data or {}),
        at=now or utcnow(),
    )
    session.add(entry)
    return entry


def _audit(
    session: Session,
    sub: Submission,
    actor: str,
    action: str,
    *,
    data: Mapping[str, JsonValue] | None = None,
) -> None:
    record(
        session,
        actor=actor,
        organisation_id=sub.organisation_id,
        object_type="submission",
        object_id=_sid(sub),
        action=action,
        data=data,
    )


def _transition(
    session: Session, sub: Submission, to: SubmissionState, actor: str, why: str
) -> None:
    before = sub.state
    if before is to:
        return
    sub.state = to
    sub.updated_at = utcnow()
    session.add(sub)
    record(
        session,
        actor=actor,
        organisation_id=sub.organisation_id,
        object_type="submission",
        object_id=_sid(sub),
        action="transition",
        from_state=before,
        to_state=to,
        reason=why,
    )


def _subject(session: Session, sub: Submission) -> dict[str, JsonValue]:
    """What every webhook says about the submission it concerns."""
    system = session.get(System, sub.system_id)
    workload = session.get(Workload, sub.workload_id)
    return {
        "submission_id": _sid(sub),
        "organisation_id": sub.organisation_id,
        "system_id": sub.system_id,
        "system": system.name if system else None,
        "workload_id": sub.workload_id,
        "workload": f"{workload.name} v{workload.version}" if workload else None,
        "state": sub.state.value,
        "publication": sub.publication.value,
    }


def _event(session: Session, sub: Submission) -> dict[str, JsonValue]:
    findings = list(sub.findings or [])
    return {
        **_subject(session, sub),
        "points": [
            {"point_id": _pid(p), "concurrency": p.concurrency}
            for p in _candidates(session, _sid(sub))
        ],
        "findings": summary_of(findings),
        "blocking": sorted({f.check for f in stored_blocking(findings)}),
        "checked_at": sub.checked_at.isoformat() if sub.checked_at else None,
    }


def _outcome(point: Point) -> dict[str, JsonValue]:
    return {
        "point_id": _pid(point),
        "concurrency": point.concurrency,
        "state": point.state.value,
        "comment": point.review_comment,
        "reviewed_by": point.reviewed_by,
    }
