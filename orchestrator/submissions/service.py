"""Submissions: create (idempotent), plan one run per level, read with progress, cancel.

A new submission is planned at once — one performance run per level, in the order given —
and handed to the dispatcher. From then on the store is the truth: workers claim runs from
it, so a lost or duplicated dispatch neither loses nor doubles work.
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from orchestrator.audit.service import record
from orchestrator.auth.service import Principal
from orchestrator.db import paginate, utcnow
from orchestrator.dispatch import Dispatcher
from orchestrator.endpoints.models import EndpointState
from orchestrator.endpoints.service import get_endpoint
from orchestrator.errors import Conflict, Forbidden, Invalid, NotFound
from orchestrator.runs.models import Run, RunKind, RunState
from orchestrator.submissions.models import Submission, SubmissionState
from orchestrator.submissions.schemas import RunPublic, SubmissionCreate, SubmissionPublic
from orchestrator.systems.service import get_system
from orchestrator.workloads.service import resolve

TERMINAL = {
    SubmissionState.ACCEPTED,
    SubmissionState.REJECTED,
    SubmissionState.WITHDRAWN,
    SubmissionState.CANCELLED,
}


def create_submission(
    session: Session,
    *,
    principal: Principal,
    data: SubmissionCreate,
    dispatcher: Dispatcher,
    idempotency_key: str | None = None,
) -> tuple[Submission, bool]:
    """Return (submission, created). A repeated idempotency key returns the first one.

    Keys are per organisation of the submission (the system's), not of the caller: an
    operator submitting for an organisation retries in that organisation's keys.
    """
    if idempotency_key is not None and not 1 <= len(idempotency_key) <= 200:
        raise Invalid("Idempotency-Key must be 1–200 characters", field="Idempotency-Key")
    system = get_system(session, principal=principal, system_id=data.system_id)
    if not principal.can_write(system.organisation_id):
        raise Forbidden("this token may not submit for that system")
    if idempotency_key is not None:
        existing = session.exec(
            select(Submission).where(
                Submission.organisation_id == system.organisation_id,
                Submission.idempotency_key == idempotency_key,
            )
        ).first()
        if existing is not None:
            return existing, False
    endpoint = get_endpoint(session, principal=principal, endpoint_id=data.endpoint_id)
    if endpoint.system_id != system.id:
        raise Invalid(f"endpoint {endpoint.id} serves another system", field="endpoint_id")
    if endpoint.state is not EndpointState.ACTIVE:
        raise Invalid(f"endpoint {endpoint.id} is {endpoint.state}", field="endpoint_id")
    workload = resolve(session, name=data.workload, version=data.workload_version)
    if data.accuracy_required and not workload.definition.get("accuracy_suite"):
        raise Invalid(f"workload {workload.name} has no accuracy suite", field="accuracy_required")
    if data.pattern != "poisson" and any(level != int(level) for level in data.levels):
        raise Invalid(f"{data.pattern} levels must be whole numbers", field="levels")
    if data.not_before and data.not_after and data.not_after <= data.not_before:
        raise Invalid("not_after must be later than not_before", field="not_after")
    measurement = workload.definition.get("measurement", {})
    requests = data.requests or measurement.get("requests_per_level")
    min_duration_s = data.min_duration_s or measurement.get("min_duration_s")
    if data.pattern != "offline" and requests is None and min_duration_s is None:
        raise Invalid(
            "give requests or min_duration_s (the workload sets neither)", field="requests"
        )
    assert system.id is not None and workload.id is not None
    submission = Submission(
        organisation_id=system.organisation_id,
        system_id=system.id,
        endpoint_id=data.endpoint_id,
        workload_id=workload.id,
        state=SubmissionState.QUEUED,
        pattern=data.pattern,
        levels=list(data.levels),
        requests=requests,
        min_duration_s=min_duration_s,
        warmup=data.warmup if data.warmup is not None else measurement.get("warmup", 0),
        accuracy_required=data.accuracy_required,
        server_config=data.server_config,
        not_before=data.not_before,
        not_after=data.not_after,
        idempotency_key=idempotency_key,
        created_by=principal.actor,
    )
    session.add(submission)
    try:
        session.flush()
    except IntegrityError:  # the same key, sent twice at once: the other one won
        session.rollback()
        raise Conflict(
            "a submission with this Idempotency-Key is being created", field="Idempotency-Key"
        ) from None
    assert submission.id is not None
    for position, level in enumerate(data.levels):
        session.add(
            Run(
                submission_id=submission.id,
                run_key=f"{submission.id}:{RunKind.PERFORMANCE}:{position}:{level:g}",
                kind=RunKind.PERFORMANCE,
                position=position,
                level=level,
            )
        )
    record(
        session,
        actor=principal.actor,
        organisation_id=submission.organisation_id,
        object_type="submission",
        object_id=submission.id,
        action="create",
        to_state=SubmissionState.QUEUED,
        data={"levels": list(data.levels)},
    )
    session.commit()  # the worker must find it before it is nudged
    dispatcher.measure_next(submission.id)
    return submission, True


def get_submission(session: Session, *, principal: Principal, submission_id: int) -> Submission:
    submission = session.get(Submission, submission_id)
    if submission is None or not principal.can_read(submission.organisation_id):
        raise NotFound(f"no submission {submission_id}")
    return submission


def list_submissions(
    session: Session,
    *,
    principal: Principal,
    limit: int,
    offset: int,
    system_id: int | None = None,
    endpoint_id: int | None = None,
    state: str | None = None,
) -> tuple[list[Submission], int]:
    query = principal.scope(select(Submission), Submission.organisation_id)
    if system_id is not None:
        query = query.where(Submission.system_id == system_id)
    if endpoint_id is not None:
        query = query.where(Submission.endpoint_id == endpoint_id)
    if state is not None:
        query = query.where(Submission.state == state)
    return paginate(session, query, order_by=col(Submission.id).desc(), limit=limit, offset=offset)


def runs_of(session: Session, submission_id: int) -> list[Run]:
    return list(
        session.exec(
            select(Run).where(Run.submission_id == submission_id).order_by(col(Run.position))
        ).all()
    )


def to_public(session: Session, submission: Submission) -> SubmissionPublic:
    assert submission.id is not None
    public = SubmissionPublic.model_validate(submission)
    public.runs = [RunPublic.model_validate(r) for r in runs_of(session, submission.id)]
    return public


def cancel_submission(
    session: Session, *, principal: Principal, submission_id: int, withdraw: bool = False
) -> Submission:
    """Cancel (before it is measured) or withdraw (after); cancellation goes through the
    store, so it works on every transport: the worker checks the flag between and during
    runs."""
    submission = get_submission(session, principal=principal, submission_id=submission_id)
    if not principal.can_write(submission.organisation_id):
        raise Forbidden("this token may not change that submission")
    if submission.state in TERMINAL:
        raise Conflict(f"submission {submission_id} is already {submission.state}", field="state")
    before = submission.state
    submission.cancel_requested = True
    if withdraw or before in (SubmissionState.MEASURED, SubmissionState.IN_REVIEW):
        submission.state = SubmissionState.WITHDRAWN
    elif before in (SubmissionState.QUEUED, SubmissionState.DRAFT, SubmissionState.FAILED):
        submission.state = SubmissionState.CANCELLED
    # RUNNING: the worker stops the current run and marks the submission cancelled
    submission.updated_at = utcnow()
    for run in runs_of(session, submission_id):
        if run.state is RunState.PLANNED:
            run.state = RunState.CANCELLED
            session.add(run)
    session.add(submission)
    record(
        session,
        actor=principal.actor,
        organisation_id=submission.organisation_id,
        object_type="submission",
        object_id=submission_id,
        action="withdraw" if withdraw else "cancel",
        from_state=before,
        to_state=submission.state,
    )
    return submission
