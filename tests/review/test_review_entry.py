"""Entering review through the real path: the worker's finish_if_done on a measured submission."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from orchestrator.audit.models import AuditEntry
from orchestrator.review import entry as review_service
from orchestrator.review.models import ReviewAction, ReviewEntry, WebhookDelivery
from orchestrator.review.service import LocalOperator, queue, recheck
from orchestrator.runs.models import Point
from orchestrator.runs.service import finish_if_done
from orchestrator.submissions.models import Submission, SubmissionState


def test_finish_if_done_checks_and_queues_for_review(
    review_engine: Engine, build: Any, use_programme: Callable[..., Any]
) -> None:
    use_programme(webhooks=[{"url": "http://127.0.0.1:9/hook"}])
    system_id = build.system("acme")
    built = build.submission(system_id=system_id, levels=(1, 2, 4), state=SubmissionState.RUNNING)

    assert finish_if_done(review_engine, submission_id=built.submission_id) == "in_review"

    with Session(review_engine) as session:
        sub = session.get(Submission, built.submission_id)
        assert sub is not None and sub.state is SubmissionState.IN_REVIEW
        assert sub.checked_at is not None
        assert sub.findings, "the checker's findings are stored with the submission"
        for finding in sub.findings:
            assert {"check", "severity", "passed", "message", "point_id"} <= set(finding)
            assert finding["severity"] in ("error", "warning")
        checked_points = {f["point_id"] for f in sub.findings} - {None}
        assert checked_points <= set(built.point_ids) and checked_points
        transitions = session.exec(
            select(AuditEntry.to_state)
            .where(AuditEntry.object_type == "submission", AuditEntry.object_id == sub.id)
            .order_by(col(AuditEntry.id))
        ).all()
        assert list(transitions)[-2:] == ["measured", "in_review"]
        thread = session.exec(select(ReviewEntry).where(ReviewEntry.submission_id == sub.id)).all()
        assert len(thread) == 1 and thread[0].action is ReviewAction.COMMENT
        assert thread[0].comment.startswith("automated checks:")
        deliveries = session.exec(select(WebhookDelivery)).all()
        assert [d.event for d in deliveries] == ["submission.review_requested"]
        payload = deliveries[0].payload
        assert payload["submission_id"] == sub.id and payload["state"] == "in_review"
        assert [p["point_id"] for p in payload["points"]] == built.point_ids
        assert payload["findings"]["total"] == len(sub.findings)
        points = session.exec(select(Point).where(Point.submission_id == sub.id)).all()
        assert {p.state for p in points} == {"candidate"}
        [item], total = queue(session, principal=LocalOperator())
        assert total == 1 and item.submission.id == sub.id and item.undecided == 3
        assert item.waiting_since is not None and item.workload == "chat-smoke v1"


def test_a_broken_checker_leaves_a_blocking_finding_not_a_stranded_submission(
    review_engine: Engine, build: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("tensor_parallel")

    monkeypatch.setattr(review_service, "run_checks", broken)
    built = build.submission(system_id=build.system("acme"), state=SubmissionState.RUNNING)
    assert finish_if_done(review_engine, submission_id=built.submission_id) == "in_review"
    with Session(review_engine) as session:
        sub = session.get(Submission, built.submission_id)
        assert sub is not None
        [finding] = sub.findings
        assert finding["check"] == "checker.error" and finding["severity"] == "error"
        assert "KeyError" in finding["message"] and finding["passed"] is False


def test_a_submission_without_points_stays_measured(review_engine: Engine, build: Any) -> None:
    system_id = build.system("acme")
    built = build.submission(system_id=system_id, levels=(), state=SubmissionState.RUNNING)
    assert finish_if_done(review_engine, submission_id=built.submission_id) == "measured"
    with Session(review_engine) as session:
        sub = session.get(Submission, built.submission_id)
        assert sub is not None and sub.checked_at is not None
        assert any(f["check"] == "points.present" and not f["passed"] for f in sub.findings)
        assert session.exec(select(WebhookDelivery)).all() == []


def test_recheck_replaces_findings_and_writes_the_thread(review_engine: Engine, build: Any) -> None:
    system_id = build.system("acme")
    stale = [{"check": "old", "severity": "error", "passed": False, "message": "x"}]
    built = build.submission(system_id=system_id, findings=stale)
    with Session(review_engine) as session:
        sub = recheck(session, principal=LocalOperator(), submission_id=built.submission_id)
        session.commit()
        assert sub.state is SubmissionState.IN_REVIEW
        assert "old" not in {f["check"] for f in sub.findings} and sub.findings
        entry = session.exec(select(ReviewEntry).where(ReviewEntry.submission_id == sub.id)).one()
        assert entry.actor == "cli" and entry.comment.startswith("re-run: automated checks")
        assert entry.data["before"]["blocking"] == 1
        audit = session.exec(
            select(AuditEntry).where(AuditEntry.action == "recheck", AuditEntry.object_id == sub.id)
        ).one()
        assert audit.actor == "cli"
