"""Who acts in review, and the submission they act on (DESIGN §8).

Callers are `Reviewer`s: an API token's `Principal`, or `LocalOperator` — an operator at the
machine (the CLI), which reads and writes everything and is audited under its actor name.
Every review action starts from `readable_submission` (a submission the caller may read, else
"not found") and its points; `CLOSED` and `DECIDED` are the states in which a submission
takes no more decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlmodel import Session, col, select

from orchestrator.errors import NotFound
from orchestrator.runs.models import Point, PointState
from orchestrator.submissions.models import Submission, SubmissionState

__all__ = [
    "CLOSED",
    "DECIDED",
    "LocalOperator",
    "Reviewer",
    "candidates_of",
    "point_id_of",
    "points_of",
    "readable_submission",
    "submission_id_of",
]

CLOSED = (SubmissionState.WITHDRAWN, SubmissionState.CANCELLED)
DECIDED = (SubmissionState.ACCEPTED, SubmissionState.REJECTED)


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


def submission_id_of(sub: Submission) -> int:
    assert sub.id is not None
    return sub.id


def point_id_of(point: Point) -> int:
    assert point.id is not None
    return point.id


def readable_submission(
    session: Session, principal: Reviewer, submission_id: int, *, lock: bool = False
) -> Submission:
    query = select(Submission).where(col(Submission.id) == submission_id)
    if lock:  # PostgreSQL: two operators deciding at once queue up; SQLite serialises writers
        query = query.with_for_update().execution_options(populate_existing=True)
    sub = session.exec(query).first()
    if sub is None or not principal.can_read(sub.organisation_id):
        raise NotFound(f"no submission {submission_id}")
    return sub


def points_of(session: Session, submission_id: int) -> list[Point]:
    return list(
        session.exec(
            select(Point)
            .where(col(Point.submission_id) == submission_id)
            .order_by(col(Point.concurrency), col(Point.id))
        ).all()
    )


def candidates_of(session: Session, submission_id: int) -> list[Point]:
    return [p for p in points_of(session, submission_id) if p.state is PointState.CANDIDATE]
