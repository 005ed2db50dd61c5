"""Review threads and the outbox of webhook deliveries."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlmodel import Column, Field, SQLModel

from orchestrator.db import JSONDoc, enum_type, timestamp_column, utcnow

MAX_COMMENT_CHARS = 4000  # ReviewEntry.comment and Point.review_comment


class ReviewAction(enum.StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    COMMENT = "comment"  # an operator's note
    REPLY = "reply"  # the submitter's answer
    PUBLICATION = "publication"  # publication status changed


class ReviewEntry(SQLModel, table=True):
    """One message of a submission's review thread; `point_id` None: the whole submission."""

    __tablename__ = "review_entry"

    id: int | None = Field(default=None, primary_key=True)
    submission_id: int = Field(foreign_key="submission.id", index=True)
    point_id: int | None = Field(default=None, foreign_key="point.id", index=True)
    action: ReviewAction = Field(sa_type=enum_type(ReviewAction, 16))
    actor: str = Field(max_length=100)
    comment: str = Field(default="", max_length=MAX_COMMENT_CHARS)
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONDoc, nullable=False))
    at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())


class DeliveryState(enum.StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"  # gave up after the last attempt


class WebhookDelivery(SQLModel, table=True):
    """An event to POST to a webhook; written in the transaction that caused it (an outbox)."""

    __tablename__ = "webhook_delivery"

    id: int | None = Field(default=None, primary_key=True)
    event: str = Field(max_length=60, index=True)
    url: str = Field(max_length=2000)
    payload: dict[str, Any] = Field(sa_column=Column(JSONDoc, nullable=False))
    state: DeliveryState = Field(
        default=DeliveryState.PENDING, sa_type=enum_type(DeliveryState, 16), index=True
    )
    attempts: int = Field(default=0, ge=0)
    next_attempt_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
    last_status: int | None = None
    last_error: str = Field(default="", max_length=2000)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
    delivered_at: datetime | None = Field(default=None, sa_column=timestamp_column(True))
