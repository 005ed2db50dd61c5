"""Entering review (DESIGN §8): the automated checker runs and the submission is queued.

A measured submission enters review as soon as every run is measured (`enter_review`, from
the worker's `finish_if_done`): the automated checker runs, its findings are stored with the
submission, the submission moves to IN_REVIEW and a `submission.review_requested` webhook is
queued — all in one transaction. A submission without a candidate point keeps its findings
and stays MEASURED. Operators may run the checker again (`recheck`); a checker that breaks
leaves a blocking `checker.error` finding rather than a stranded submission.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from orchestrator.db import utcnow
from orchestrator.errors import Conflict, Forbidden
from orchestrator.programme import ProgrammeRules
from orchestrator.review import webhooks
from orchestrator.review.access import (
    CLOSED,
    DECIDED,
    Reviewer,
    candidates_of,
    readable_submission,
    submission_id_of,
)
from orchestrator.review.checks import run_checks
from orchestrator.review.events import review_requested
from orchestrator.review.findings import Finding, stored_blocking, summary_of
from orchestrator.review.models import ReviewAction
from orchestrator.review.thread import add_entry, audit_submission, transition
from orchestrator.submissions.models import Submission, SubmissionState
from orchestrator.submissions.schemas import summarise

__all__ = ["enter_review", "recheck"]

log = logging.getLogger("rollbench.review")


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
    candidates = candidates_of(session, submission_id_of(submission))
    if not candidates:
        audit_submission(
            session, submission, actor, "checked", data={"findings": summary_of(findings)}
        )
        return False
    transition(session, submission, SubmissionState.IN_REVIEW, actor, "checked; awaiting review")
    add_entry(
        session,
        submission,
        ReviewAction.COMMENT,
        actor,
        _checked_sentence(findings),
        data={"findings": summary_of(findings)},
        now=now,
    )
    webhooks.enqueue(
        session,
        "submission.review_requested",
        review_requested(session, submission, candidates),
        rules=rules,
        now=now,
    )
    return True


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
    sub = readable_submission(session, principal, submission_id, lock=True)
    if not principal.is_operator:
        raise Forbidden("only operators re-run the checks")
    if sub.state in CLOSED or sub.state in DECIDED:
        raise Conflict(f"submission {submission_id} is {sub.state}: its findings stand")
    if sub.state is SubmissionState.MEASURED:
        enter_review(session, submission=sub, actor=principal.actor, rules=rules, now=now)
        return sub
    before = summary_of(sub.findings or [])
    findings = _check(session, sub, rules, now=now)
    add_entry(
        session,
        sub,
        ReviewAction.COMMENT,
        principal.actor,
        "re-run: " + _checked_sentence(findings),
        data={"findings": summary_of(findings), "before": before},
        now=now,
    )
    audit_submission(
        session,
        sub,
        principal.actor,
        "recheck",
        data={"before": before, "after": summary_of(findings)},
    )
    return sub


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
