"""The submission table and its states (DESIGN §4)."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from orchestrator.db import JSONDoc, enum_type, timestamp_column, utcnow


class SubmissionState(enum.StrEnum):
    DRAFT = "draft"
    QUEUED = "queued"
    RUNNING = "running"
    MEASURED = "measured"
    IN_REVIEW = "in_review"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    CANCELLED = "cancelled"
    FAILED = "failed"  # infrastructure failure, retryable


class SubmissionSource(enum.StrEnum):
    MEASURED = "measured"  # measured here, by the daemon
    IMPORTED = "imported"  # run folders of the MLCommons reference client, or v0.7 metadata


class Publication(enum.StrEnum):
    """MLPerf publication status of a submission's results."""

    AVAILABLE = "available"
    PREVIEW = "preview"
    RDI = "rdi"


class Submission(SQLModel, table=True):
    __tablename__ = "submission"
    __table_args__ = (UniqueConstraint("organisation_id", "idempotency_key"),)

    id: int | None = Field(default=None, primary_key=True)
    organisation_id: int = Field(foreign_key="organisation.id", index=True)
    system_id: int = Field(foreign_key="system.id", index=True)
    # None only for imported submissions, which were measured elsewhere.
    endpoint_id: int | None = Field(default=None, foreign_key="endpoint.id", index=True)
    workload_id: int = Field(foreign_key="workload.id", index=True)
    state: SubmissionState = Field(
        default=SubmissionState.QUEUED,
        sa_type=enum_type(SubmissionState, 16),
        index=True,
    )
    pattern: str = Field(default="concurrency", max_length=16)
    levels: list[float] = Field(sa_column=Column(JSONDoc, nullable=False))
    requests: int | None = Field(default=None, ge=1)
    min_duration_s: float | None = Field(default=None, gt=0)
    warmup: int = Field(default=0, ge=0)
    accuracy_required: bool = False
    server_config: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSONDoc, nullable=False)
    )
    not_before: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    not_after: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    idempotency_key: str | None = Field(default=None, max_length=200)
    cancel_requested: bool = False
    source: SubmissionSource = Field(
        default=SubmissionSource.MEASURED, sa_type=enum_type(SubmissionSource, 16)
    )
    publication: Publication = Field(
        default=Publication.AVAILABLE, sa_type=enum_type(Publication, 16)
    )
    # The automated checker's findings (DESIGN §8), stored when it last ran.
    findings: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSONDoc, nullable=False)
    )
    checked_at: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    decided_at: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    created_by: str = Field(default="", max_length=100)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
    updated_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
