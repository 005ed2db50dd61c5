"""Points: one per measured concurrency level.

Who reads a point: accepted points are published results (and superseded ones, which were
accepted and stay in the frontier's history), so any authenticated principal reads and lists
them; a candidate or rejected point is read by whoever may read its submission. Review
(accept, reject) is orchestrator/review/decisions.py; superseding is the frontier's.
"""

from __future__ import annotations

from sqlalchemy import or_
from sqlmodel import Session, col, select

from orchestrator.auth.service import Principal
from orchestrator.db import paginate
from orchestrator.errors import NotFound
from orchestrator.runs.models import Point, PointState
from orchestrator.submissions.models import Submission

PUBLISHED = (PointState.ACCEPTED, PointState.SUPERSEDED)


def is_published(point: Point) -> bool:
    return point.state in PUBLISHED


def list_points(
    session: Session,
    *,
    principal: Principal,
    limit: int,
    offset: int,
    system_id: int | None = None,
    submission_id: int | None = None,
    state: str | None = None,
    published: bool | None = None,
) -> tuple[list[Point], int]:
    """Points the principal may read; `published` True: only published ones, False: only
    the others (still within what the principal may read)."""
    query = select(Point).join(Submission, col(Submission.id) == Point.submission_id)
    if not principal.reads_everything:
        query = query.where(
            or_(
                col(Submission.organisation_id) == principal.organisation_id,
                col(Point.state).in_(PUBLISHED),
            )
        )
    if published is True:
        query = query.where(col(Point.state).in_(PUBLISHED))
    elif published is False:
        query = query.where(col(Point.state).not_in(PUBLISHED))
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
        if is_published(point):
            return point
        sub = session.get(Submission, point.submission_id)
        if sub is not None and principal.can_read(sub.organisation_id):
            return point
    raise NotFound(f"no point {point_id}")
