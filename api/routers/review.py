"""/v1/review/queue and /v1/submissions/{id}/review, replies, publication, checks.

Operators decide, set the publication status and re-run the checker; the submitter of the
submission's organisation replies in its thread; whoever may read a submission reads its
review.
"""

from __future__ import annotations

from fastapi import APIRouter
from sqlmodel import Session

from api.deps import IdPath, PageDep, PrincipalDep, SessionDep
from orchestrator.review import service
from orchestrator.review.schemas import (
    DecideIn,
    FindingPublic,
    FrontierContext,
    PublicationIn,
    QueueItemPublic,
    QueueList,
    ReplyIn,
    ReviewEntryPublic,
    ReviewPointPublic,
    ReviewPublic,
)
from orchestrator.submissions.schemas import FindingsSummary, SubmissionPublic, summarise
from orchestrator.submissions.service import to_public

router = APIRouter(prefix="/v1", tags=["review"])


def _review(session: Session, view: service.ReviewView) -> ReviewPublic:
    sub = view.submission
    points = []
    for point in view.points:
        shown = ReviewPointPublic.model_validate(point)
        shown.blocking = view.blocking_by_point.get(shown.id, [])
        points.append(shown)
    findings = []
    for doc in view.findings:
        try:
            findings.append(FindingPublic.model_validate(doc))
        except ValueError:  # a stored finding of another shape: shown by its summary only
            continue
    return ReviewPublic(
        submission=to_public(session, sub),
        points=points,
        findings=findings,
        findings_summary=FindingsSummary(**summarise(view.findings)),
        thread=[ReviewEntryPublic.model_validate(e) for e in view.thread],
        frontier=FrontierContext(
            system_id=sub.system_id,
            workload_id=sub.workload_id,
            version=view.frontier.version if view.frontier else None,
            members=list(view.frontier.members) if view.frontier else [],
            pareto=list(view.frontier.pareto) if view.frontier else [],
            window_open=view.window_open,
            window_message=view.window_message,
        ),
    )


@router.get("/review/queue", response_model=QueueList)
def review_queue(session: SessionDep, principal: PrincipalDep, page: PageDep) -> QueueList:
    items, total = service.queue(session, principal=principal, limit=page.limit, offset=page.offset)
    return QueueList(
        items=[
            QueueItemPublic(
                submission_id=item.submission.id or 0,
                organisation_id=item.submission.organisation_id,
                system_id=item.submission.system_id,
                system=item.system,
                workload=item.workload,
                points=item.points,
                undecided=item.undecided,
                blocking=item.blocking,
                warnings=item.warnings,
                publication=item.submission.publication,
                waiting_since=item.waiting_since,
            )
            for item in items
        ],
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


@router.get("/submissions/{submission_id}/review", response_model=ReviewPublic)
def get_review(submission_id: IdPath, session: SessionDep, principal: PrincipalDep) -> ReviewPublic:
    view = service.get_review(session, principal=principal, submission_id=submission_id)
    return _review(session, view)


@router.post("/submissions/{submission_id}/review", response_model=ReviewPublic)
def decide(
    submission_id: IdPath, body: DecideIn, session: SessionDep, principal: PrincipalDep
) -> ReviewPublic:
    service.decide(
        session,
        principal=principal,
        submission_id=submission_id,
        decisions=[
            service.PointDecision(d.point_id, d.decision, d.comment) for d in body.decisions
        ],
        comment=body.comment,
    )
    session.flush()
    view = service.get_review(session, principal=principal, submission_id=submission_id)
    return _review(session, view)


@router.post(
    "/submissions/{submission_id}/replies", status_code=201, response_model=ReviewEntryPublic
)
def reply(
    submission_id: IdPath, body: ReplyIn, session: SessionDep, principal: PrincipalDep
) -> ReviewEntryPublic:
    entry = service.reply(
        session,
        principal=principal,
        submission_id=submission_id,
        comment=body.comment,
        point_id=body.point_id,
    )
    return ReviewEntryPublic.model_validate(entry)


@router.put("/submissions/{submission_id}/publication", response_model=SubmissionPublic)
def set_publication(
    submission_id: IdPath, body: PublicationIn, session: SessionDep, principal: PrincipalDep
) -> SubmissionPublic:
    sub = service.set_publication(
        session,
        principal=principal,
        submission_id=submission_id,
        publication=body.publication,
        comment=body.comment,
    )
    return to_public(session, sub)


@router.post("/submissions/{submission_id}/checks", response_model=ReviewPublic)
def recheck(submission_id: IdPath, session: SessionDep, principal: PrincipalDep) -> ReviewPublic:
    service.recheck(session, principal=principal, submission_id=submission_id)
    session.flush()
    view = service.get_review(session, principal=principal, submission_id=submission_id)
    return _review(session, view)
