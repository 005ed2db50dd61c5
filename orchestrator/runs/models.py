"""Run and point tables.

A run is keyed by `run_key` (submission, kind, level): a redelivered or restarted task finds
the run it already made instead of measuring the level twice. Per-request records stay in an
artifact file; the run keeps its path and checksum, and the summary goes in the table.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlmodel import Column, Field, SQLModel

from orchestrator.db import JSONDoc, enum_type, timestamp_column, utcnow


class RunKind(enum.StrEnum):
    PERFORMANCE = "performance"
    ACCURACY = "accuracy"


class RunState(enum.StrEnum):
    PLANNED = "planned"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Run(SQLModel, table=True):
    __tablename__ = "run"

    id: int | None = Field(default=None, primary_key=True)
    submission_id: int = Field(foreign_key="submission.id", index=True)
    run_key: str = Field(max_length=200, unique=True)
    kind: RunKind = Field(sa_type=enum_type(RunKind, 16))
    position: int = Field(ge=0, description="order within the submission")
    level: float
    state: RunState = Field(default=RunState.PLANNED, sa_type=enum_type(RunState, 16))
    attempts: int = Field(default=0, ge=0)
    # Whoever measures the run holds a lease and renews it while measuring; a lease that ran
    # out means its worker died, and the run may be claimed again (and measured from scratch).
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_until: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    started_at: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    finished_at: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    progress: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSONDoc, nullable=False)
    )
    summary: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONDoc))
    artifact_path: str | None = Field(default=None, max_length=1000)
    artifact_sha256: str | None = Field(default=None, max_length=64)
    error: str | None = Field(default=None, max_length=4000)


class PointState(enum.StrEnum):
    CANDIDATE = "candidate"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"


class Point(SQLModel, table=True):
    __tablename__ = "point"

    id: int | None = Field(default=None, primary_key=True)
    submission_id: int = Field(foreign_key="submission.id", index=True)
    run_id: int = Field(foreign_key="run.id", unique=True)
    system_id: int = Field(foreign_key="system.id", index=True)
    workload_id: int = Field(foreign_key="workload.id", index=True)
    concurrency: int = Field(ge=1)
    state: PointState = Field(default=PointState.CANDIDATE, sa_type=enum_type(PointState, 16))
    metrics: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONDoc, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
    reviewed_by: str | None = Field(default=None, max_length=100)
    reviewed_at: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    review_comment: str = Field(default="", max_length=4000)
    # the newer accepted point at the same concurrency that replaced this one
    superseded_by: int | None = Field(default=None)
