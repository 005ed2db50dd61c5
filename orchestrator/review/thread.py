"""A submission's review thread and its audit: replies, comments and the publication status.

Every change in review is audited and written to the submission's thread (`ReviewEntry`):
`add_entry`, `audit_submission` and `transition` are how the other review modules do so.
Here too are the two thread actions of their own: the submitter answers in the thread and
operators comment (`reply`), and operators set the MLPerf publication status
(`set_publication`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlmodel import Session, col, select

from orchestrator.audit.service import record
from orchestrator.db import storable, utcnow
from orchestrator.errors import Conflict, Forbidden, Invalid
from orchestrator.review.access import CLOSED, Reviewer, readable_submission, submission_id_of
from orchestrator.review.models import MAX_COMMENT_CHARS, ReviewAction, ReviewEntry
from orchestrator.runs.models import Point
from orchestrator.stats.jsontypes import JsonValue
from orchestrator.submissions.models import Publication, Submission, SubmissionState

__all__ = [
    "MAX_COMMENT_CHARS",
    "add_entry",
    "audit_submission",
    "clean_comment",
    "reply",
    "set_publication",
    "thread_of",
    "transition",
]


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
    sub = readable_submission(session, principal, submission_id)
    if principal.is_operator:
        action = ReviewAction.COMMENT
    elif principal.can_write(sub.organisation_id):
        action = ReviewAction.REPLY
    else:
        raise Forbidden("this token may not write in that submission's review")
    text = clean_comment(comment, "comment")
    if not text:
        raise Invalid("must not be empty", field="comment")
    if point_id is not None:
        point = session.get(Point, point_id)
        if point is None or point.submission_id != submission_id:
            raise Invalid(f"no point {point_id} in submission {submission_id}", field="point_id")
    entry = add_entry(
        session, sub, action, principal.actor, text, point_id=point_id, now=now or utcnow()
    )
    session.flush()
    assert entry.id is not None
    audit_submission(
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
    sub = readable_submission(session, principal, submission_id, lock=True)
    if not principal.is_operator:
        raise Forbidden("only operators set the publication status")
    try:
        status = Publication(publication)
    except ValueError:
        allowed = ", ".join(p.value for p in Publication)
        raise Invalid(f"must be one of {allowed}", field="publication") from None
    if sub.state in CLOSED:
        raise Conflict(f"submission {submission_id} was {sub.state}", field="state")
    text = clean_comment(comment, "comment")
    before = sub.publication
    if before is status:
        return sub
    sub.publication = status
    sub.updated_at = now or utcnow()
    session.add(sub)
    add_entry(
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


# ------------------------------------------------------------------------------ records


def thread_of(session: Session, submission_id: int) -> list[ReviewEntry]:
    return list(
        session.exec(
            select(ReviewEntry)
            .where(col(ReviewEntry.submission_id) == submission_id)
            .order_by(col(ReviewEntry.at), col(ReviewEntry.id))
        ).all()
    )


def clean_comment(text: str, field: str) -> str:
    if len(text) > MAX_COMMENT_CHARS:
        raise Invalid(f"at most {MAX_COMMENT_CHARS} characters", field=field)
    try:
        storable(text)
    except ValueError as exc:
        raise Invalid(str(exc), field=field) from None
    return text.strip()


def add_entry(
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
        submission_id=submission_id_of(sub),
        point_id=point_id,
        action=action,
        actor=actor[:100],
        comment=comment,
        data=dict(data or {}),
        at=now or utcnow(),
    )
    session.add(entry)
    return entry


def audit_submission(
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
        object_id=submission_id_of(sub),
        action=action,
        data=data,
    )


def transition(
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
        object_id=submission_id_of(sub),
        action="transition",
        from_state=before,
        to_state=to,
        reason=why,
    )
