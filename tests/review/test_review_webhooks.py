"""Webhooks: queued with the review change, POSTed to a real receiver on 127.0.0.1, signed,
retried with backoff when the receiver fails, FAILED after the last attempt."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from orchestrator.audit.models import AuditEntry
from orchestrator.config import get_settings
from orchestrator.db import utcnow
from orchestrator.review import webhooks
from orchestrator.review.models import DeliveryState, WebhookDelivery
from orchestrator.review.service import LocalOperator, accept_all, reject_all
from orchestrator.runs.service import finish_if_done
from orchestrator.submissions.models import SubmissionState

SECRET = "whsec-test-0123456789"
PASSED = {"check": "errors.rate", "severity": "error", "passed": True, "message": "ok"}


def deliveries(engine: Engine) -> list[WebhookDelivery]:
    with Session(engine) as session:
        return list(session.exec(select(WebhookDelivery).order_by(col(WebhookDelivery.id))).all())


def test_review_requested_and_decided_are_delivered_signed(
    review_engine: Engine,
    build: Any,
    use_programme: Callable[..., Any],
    receiver: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ROLLBENCH_WEBHOOK_SECRET", SECRET)
    use_programme(webhooks=[{"url": receiver.url}])
    built = build.submission(
        system_id=build.system("acme"), levels=(1, 2), state=SubmissionState.RUNNING
    )
    assert finish_if_done(review_engine, submission_id=built.submission_id) == "in_review"
    with Session(review_engine) as session:
        # the checker's verdict does not matter here: reject, which any finding allows
        reject_all(
            session,
            principal=LocalOperator(),
            submission_id=built.submission_id,
            comment="not this time",
        )
        session.commit()
    assert [d.event for d in deliveries(review_engine)] == [
        "submission.review_requested",
        "submission.decided",
    ]
    assert receiver.received == []  # an outbox: nothing is sent in the transaction

    report = webhooks.deliver_due(review_engine)
    assert report == webhooks.DeliveryReport(delivered=2)
    assert [r.path for r in receiver.received] == ["/hooks/rollbench"] * 2
    rows = deliveries(review_engine)
    for got, row in zip(receiver.received, rows, strict=True):
        headers = {k.lower(): v for k, v in got.headers.items()}
        assert headers["content-type"] == "application/json"
        assert headers["x-rollbench-event"] == row.event
        assert headers["x-rollbench-delivery"] == str(row.id)
        assert abs(int(headers["x-rollbench-timestamp"]) - time.time()) < 60
        assert webhooks.verify_signature(
            SECRET,
            headers["x-rollbench-timestamp"],
            got.body,
            headers["x-rollbench-signature"],
            max_age_s=300,
        )
        assert not webhooks.verify_signature(
            "another secret",
            headers["x-rollbench-timestamp"],
            got.body,
            headers["x-rollbench-signature"],
        )
        assert not webhooks.verify_signature(
            SECRET,
            headers["x-rollbench-timestamp"],
            got.body + b" ",
            headers["x-rollbench-signature"],
        )
        doc = json.loads(got.body)
        assert doc["event"] == row.event and doc["submission_id"] == built.submission_id
        assert row.state is DeliveryState.DELIVERED and row.attempts == 1
        assert row.last_status == 200 and row.delivered_at is not None
    decided = json.loads(receiver.received[1].body)
    assert decided["state"] == "rejected"
    assert [(p["point_id"], p["state"]) for p in decided["points"]] == [
        (i, "rejected") for i in built.point_ids
    ]
    assert {p["comment"] for p in decided["points"]} == {"not this time"}
    # delivered means done: a second pass sends nothing
    assert webhooks.deliver_due(review_engine) == webhooks.DeliveryReport()
    assert len(receiver.received) == 2


def test_accepting_queues_the_decision_with_its_frontier_version(
    review_engine: Engine, build: Any, use_programme: Callable[..., Any], receiver: Any
) -> None:
    use_programme(
        webhooks=[{"url": receiver.url, "events": ["submission.decided", "point.decided"]}]
    )
    built = build.submission(system_id=build.system("acme"), levels=(1, 2), findings=[PASSED])
    with Session(review_engine) as session:
        accept_all(session, principal=LocalOperator(), submission_id=built.submission_id)
        session.commit()
    assert [d.event for d in deliveries(review_engine)] == [
        "point.decided",
        "point.decided",
        "submission.decided",
    ]
    assert webhooks.deliver_due(review_engine).delivered == 3
    decided = json.loads(receiver.received[-1].body)
    assert decided["state"] == "accepted" and decided["frontier_version"] == 1
    # no secret configured: sent unsigned, and a receiver cannot verify it
    headers = {k.lower() for k in receiver.received[-1].headers}
    assert "x-rollbench-signature" not in headers


def test_a_failing_receiver_is_retried_with_backoff_then_failed(
    review_engine: Engine, use_programme: Callable[..., Any], receiver: Any
) -> None:
    rules = use_programme(webhooks=[{"url": receiver.url}])
    receiver.status = 500
    t0 = utcnow()
    with Session(review_engine) as session:
        webhooks.enqueue(session, "submission.decided", {"submission_id": 7}, rules=rules, now=t0)
        session.commit()

    now = t0
    waits = []
    for attempt in range(1, webhooks.MAX_ATTEMPTS + 1):
        report = webhooks.deliver_due(review_engine, now=now)
        [row] = deliveries(review_engine)
        assert row.attempts == attempt and row.last_status == 500
        assert "HTTP 500" in row.last_error
        if attempt < webhooks.MAX_ATTEMPTS:
            assert report == webhooks.DeliveryReport(retrying=1)
            wait = row.next_attempt_at - now
            waits.append(wait.total_seconds())
            # not due before its time
            early = webhooks.deliver_due(review_engine, now=now + wait - timedelta(seconds=1))
            assert early == webhooks.DeliveryReport()
            now = now + wait
        else:
            assert report == webhooks.DeliveryReport(failed=1)
            assert row.state is DeliveryState.FAILED
    assert waits == [webhooks.backoff_s(n) for n in range(1, webhooks.MAX_ATTEMPTS)]
    assert waits == sorted(waits) and waits[1] == 2 * waits[0]
    assert len(receiver.received) == webhooks.MAX_ATTEMPTS
    # the same delivery id on every retry, so the receiver can deduplicate
    assert {r.headers["X-Rollbench-Delivery"] for r in receiver.received} == {str(row.id)}
    assert webhooks.deliver_due(review_engine, now=now + timedelta(days=1)) == (
        webhooks.DeliveryReport()
    )
    with Session(review_engine) as session:
        audit = session.exec(
            select(AuditEntry).where(AuditEntry.object_type == "webhook_delivery")
        ).one()
        assert audit.to_state == "failed" and audit.object_id == row.id


def test_a_receiver_that_recovers_gets_the_delivery(
    review_engine: Engine, use_programme: Callable[..., Any], receiver: Any
) -> None:
    rules = use_programme(webhooks=[{"url": receiver.url}])
    receiver.status = 503
    with Session(review_engine) as session:
        webhooks.enqueue(session, "submission.review_requested", {"submission_id": 1}, rules=rules)
        session.commit()
    assert webhooks.deliver_due(review_engine).retrying == 1
    receiver.status = 204
    later = utcnow() + timedelta(seconds=webhooks.backoff_s(1))
    assert webhooks.deliver_due(review_engine, now=later).delivered == 1
    [row] = deliveries(review_engine)
    assert row.state is DeliveryState.DELIVERED and row.attempts == 2 and row.last_status == 204


def test_a_refused_url_is_never_contacted(
    review_engine: Engine,
    use_programme: Callable[..., Any],
    receiver: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rules = use_programme(webhooks=[{"url": receiver.url}])
    monkeypatch.setenv("ROLLBENCH_ALLOW_PRIVATE_ENDPOINTS", "false")
    get_settings.cache_clear()
    with Session(review_engine) as session:
        webhooks.enqueue(session, "submission.decided", {"submission_id": 1}, rules=rules)
        session.commit()
    assert webhooks.deliver_due(review_engine).retrying == 1
    [row] = deliveries(review_engine)
    assert row.last_error.startswith("refused URL:") and "private" in row.last_error
    assert receiver.received == []


def test_only_subscribed_webhooks_get_an_event(
    review_engine: Engine, use_programme: Callable[..., Any]
) -> None:
    rules = use_programme(
        webhooks=[
            {"url": "http://127.0.0.1:9/a", "events": ["submission.decided"]},
            {"url": "http://127.0.0.1:9/b"},
        ]
    )
    with Session(review_engine) as session:
        rows = webhooks.enqueue(session, "submission.review_requested", {"x": 1}, rules=rules)
        assert [r.url for r in rows] == ["http://127.0.0.1:9/b"]
        rows = webhooks.enqueue(session, "point.decided", {"x": 1}, rules=rules)
        assert rows == []


def test_verify_signature_refuses_stale_or_malformed_input() -> None:
    body = webhooks.body_of({"event": "submission.decided", "n": 1})
    sent = str(int(time.time()) - 1000)
    header = webhooks.sign(SECRET, sent, body)
    assert header.startswith("sha256=") and len(header) == 7 + 64
    assert webhooks.verify_signature(SECRET, sent, body.decode(), header)
    assert not webhooks.verify_signature(SECRET, sent, body, header, max_age_s=300)
    assert not webhooks.verify_signature(SECRET, "not-a-number", body, header, max_age_s=300)
    assert not webhooks.verify_signature(SECRET, sent, body, None)
    assert not webhooks.verify_signature(SECRET, str(int(sent) + 1), body, header)
