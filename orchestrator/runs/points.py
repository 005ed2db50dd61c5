"""Points: one per measured concurrency level, read by anyone allowed to read its submission.

Review (accept, reject, supersede) comes with the frontier issue; here points are listed and
read.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from orchestrator.auth.service import Principal
from orchestrator.db import paginate
from orchestrator.errors import NotFound
from orchestrator.runs.models import Point
from orchestrator.submissions.models import Submission


def list_points(
    session: Session,
    *,
    principal: Principal,
    limit: int,
    offset: int,
    system_id: int | None = None,
    submission_id: int | None = None,
    state: str | None = None,
) -> tuple[list[Point], int]:
    query = select(Point).join(Submission, col(Submission.id) == Point.submission_id)
    query = principal.scope(query, Submission.organisation_id)
    if system_id is not None:
        query = query.where(Point.system_id == system_id)
    if submission_id is not None:
        query = query.where(Point.submission_id == submission_id)
    if state is not None:
        query = query.where(Point.state == state)
    return paginate(session, query, order_by=col(Point.id), limit=limit, offset=offset)


def get_point(session: Session, *, principal: Principal, point_id: int) -> Point:
    point = session.get(Point, point_id)
    if point is not None:
        sub = session.get(Submission, point.submission_id)
        if sub is not None and principal.can_read(sub.organisation_id):
            return point
    raise NotFound(f"no point {point_id}")
