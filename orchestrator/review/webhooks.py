"""Outgoing webhooks: an outbox written with the change, delivered later by the workers.

`enqueue` adds one `WebhookDelivery` row per webhook of the programme subscribed to the event,
in the caller's transaction: a review change and its notification commit (or roll back)
together, and a receiver that is down loses nothing. `deliver_due` (a Celery task, nudged by
the scheduler every few seconds) POSTs each due delivery once and records the answer; a
failure is retried with exponential backoff, then marked FAILED after `MAX_ATTEMPTS`.

What a receiver gets: a JSON body `{"event", "at", ...event fields}` and the headers

    X-Rollbench-Event: submission.review_requested
    X-Rollbench-Delivery: 42                       (the delivery's id; the same on a retry)
    X-Rollbench-Timestamp: 1767225600              (Unix seconds when it was sent)
    X-Rollbench-Signature: sha256=<hex>            (only when ROLLBENCH_WEBHOOK_SECRET is set)

where the signature is HMAC-SHA256(secret, f"{timestamp}.{body}"); `verify_signature` checks
one. With no secret configured deliveries are sent UNSIGNED (no signature header): a
receiver must then not trust them. A retry may deliver an event twice: deduplicate on the
delivery id. URLs pass the endpoints' outbound URL check (orchestrator/endpoints/urls.py)
before every attempt; redirects are not followed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from orchestrator import __version__
from orchestrator.audit.service import record
from orchestrator.config import get_settings
from orchestrator.db import session_scope, utcnow
from orchestrator.endpoints.urls import check_url
from orchestrator.errors import Invalid
from orchestrator.programme import ProgrammeRules, programme
from orchestrator.review.models import DeliveryState, WebhookDelivery
from orchestrator.stats.jsontypes import JsonValue

__all__ = [
    "MAX_ATTEMPTS",
    "DeliveryReport",
    "backoff_s",
    "deliver_due",
    "enqueue",
    "sign",
    "verify_signature",
]

log = logging.getLogger("rollbench.webhooks")

MAX_ATTEMPTS = 8
BACKOFF_BASE_S = 10.0  # 10 s, 20 s, 40 s, ... after the 1st, 2nd, 3rd failure
BACKOFF_MAX_S = 3600.0
TIMEOUT_S = 5.0  # connect + read: a receiver should answer at once and work later
# A claimed delivery is hidden from other deliverers this long, so that two workers running
# deliver_due at once never POST the same attempt twice.
CLAIM_S = 60.0


def body_of(payload: Mapping[str, JsonValue]) -> bytes:
    """The exact bytes POSTed (and signed): compact JSON, keys sorted."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Rollbench-Signature` value: "sha256=" + HMAC-SHA256(secret, "{timestamp}.{body}")."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify_signature(
    secret: str,
    timestamp: str,
    body: bytes | str,
    header: str | None,
    *,
    max_age_s: float | None = None,
    now_s: float | None = None,
) -> bool:
    """True when `header` signs `body` sent at `timestamp` with `secret` (for receivers).

    >>> verify_signature(secret, request.headers["X-Rollbench-Timestamp"], request.body,
    ...                  request.headers.get("X-Rollbench-Signature"), max_age_s=300)

    `max_age_s` refuses old timestamps (replays); the comparison is constant-time.
    """
    if not header:
        return False
    raw = body.encode() if isinstance(body, str) else body
    if max_age_s is not None:
        try:
            sent = float(timestamp)
        except ValueError:
            return False
        if abs((time.time() if now_s is None else now_s) - sent) > max_age_s:
            return False
    return hmac.compare_digest(sign(secret, timestamp, raw), header)


def enqueue(
    session: Session,
    event: str,
    payload: Mapping[str, JsonValue],
    *,
    rules: ProgrammeRules | None = None,
    now: datetime | None = None,
) -> list[WebhookDelivery]:
    """Add a delivery of `event` for every webhook subscribed to it, in `session`'s transaction."""
    now = now or utcnow()
    doc: dict[str, JsonValue] = {"event": event, "at": now.isoformat(), **payload}
    rows = []
    for hook in (rules or programme()).webhooks:
        if event not in hook.events:
            continue
        row = WebhookDelivery(event=event, url=str(hook.url), payload=doc, next_attempt_at=now)
        session.add(row)
        rows.append(row)
    return rows


def backoff_s(attempts: int) -> float:
    """Seconds to wait after the `attempts`-th failed attempt (1-based): doubling, capped."""
    return float(min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** max(0, attempts - 1)))


@dataclass(frozen=True)
class DeliveryReport:
    delivered: int = 0
    retrying: int = 0
    failed: int = 0


def deliver_due(
    engine: Engine,
    *,
    now: datetime | None = None,
    limit: int = 50,
    client: httpx.Client | None = None,
) -> DeliveryReport:
    """POST every pending delivery whose time has come (at most `limit`); record the outcome.

    `now` is the clock the schedule is read and written with (tests move it forward to skip a
    backoff); the timestamp header is always the real time of sending.
    """
    now = now or utcnow()
    claimed = _claim(engine, now=now, limit=limit)
    if not claimed:
        return DeliveryReport()
    secret = get_settings().webhook_secret
    allow_private = get_settings().allow_private_endpoints
    counts = {DeliveryState.DELIVERED: 0, DeliveryState.PENDING: 0, DeliveryState.FAILED: 0}
    own_client = client is None
    http = client or httpx.Client(timeout=TIMEOUT_S, follow_redirects=False)
    try:
        for delivery in claimed:
            status, error = _post(
                http, delivery, secret.get_secret_value() if secret else None, allow_private
            )
            state = _settle(engine, delivery, status=status, error=error, now=now)
            counts[state] += 1
    finally:
        if own_client:
            http.close()
    return DeliveryReport(
        delivered=counts[DeliveryState.DELIVERED],
        retrying=counts[DeliveryState.PENDING],
        failed=counts[DeliveryState.FAILED],
    )


def _claim(engine: Engine, *, now: datetime, limit: int) -> list[WebhookDelivery]:
    with session_scope(engine) as session:
        due = session.exec(
            select(WebhookDelivery)
            .where(
                col(WebhookDelivery.state) == DeliveryState.PENDING,
                col(WebhookDelivery.next_attempt_at) <= now,
            )
            .order_by(col(WebhookDelivery.next_attempt_at), col(WebhookDelivery.id))
            .limit(limit)
        ).all()
        claimed = []
        for delivery in due:
            # One conditional UPDATE per row: whoever changes it first owns this attempt.
            result = session.execute(
                update(WebhookDelivery)
                .where(
                    col(WebhookDelivery.id) == delivery.id,
                    col(WebhookDelivery.state) == DeliveryState.PENDING,
                    col(WebhookDelivery.next_attempt_at) <= now,
                )
                .values(next_attempt_at=now + timedelta(seconds=CLAIM_S))
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 1:  # type: ignore[attr-defined]
                claimed.append(delivery)
        for delivery in claimed:
            session.expunge(delivery)
        return claimed


def _post(
    http: httpx.Client, delivery: WebhookDelivery, secret: str | None, allow_private: bool
) -> tuple[int | None, str]:
    """(HTTP status or None, error text): one attempt, never raising."""
    try:
        check_url(delivery.url, allow_private=allow_private, field="webhooks.url")
    except Invalid as exc:
        return None, f"refused URL: {exc.message}"
    body = body_of(delivery.payload)
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"rollbench/{__version__}",
        "X-Rollbench-Event": delivery.event,
        "X-Rollbench-Delivery": str(delivery.id),
        "X-Rollbench-Timestamp": timestamp,
    }
    if secret:
        headers["X-Rollbench-Signature"] = sign(secret, timestamp, body)
    try:  # the URL as configured (check_url's normal form drops a trailing slash)
        response = http.post(delivery.url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:2000]
    if 200 <= response.status_code < 300:
        return response.status_code, ""
    return response.status_code, f"HTTP {response.status_code}: {response.text[:200]}"


def _settle(
    engine: Engine,
    delivery: WebhookDelivery,
    *,
    status: int | None,
    error: str,
    now: datetime,
) -> DeliveryState:
    with session_scope(engine) as session:
        row = session.get(WebhookDelivery, delivery.id)
        assert row is not None and row.id is not None
        row.attempts += 1
        row.last_status = status
        row.last_error = error[:2000]
        if not error:
            row.state = DeliveryState.DELIVERED
            row.delivered_at = utcnow()
        elif row.attempts >= MAX_ATTEMPTS:
            row.state = DeliveryState.FAILED
            log.warning("webhook %s to %s failed for good: %s", row.id, row.url, error)
            record(
                session,
                actor="worker",
                organisation_id=None,
                object_type="webhook_delivery",
                object_id=row.id,
                action="failed",
                from_state=DeliveryState.PENDING,
                to_state=DeliveryState.FAILED,
                reason=error[:2000],
                data={"event": row.event, "attempts": row.attempts},
            )
        else:
            row.next_attempt_at = now + timedelta(seconds=backoff_s(row.attempts))
        session.add(row)
        return row.state
