"""The audit log table. Rows are only ever inserted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Column, Field, SQLModel

from orchestrator.db import JSONDoc, timestamp_column, utcnow


class AuditEntry(SQLModel, table=True):
    __tablename__ = "audit_entry"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column(index=True))
    actor: str = Field(max_length=100, description="token:<id>, worker, scheduler or cli")
    organisation_id: int | None = Field(default=None, foreign_key="organisation.id", index=True)
    object_type: str = Field(max_length=40, index=True)
    object_id: int = Field(index=True)
    action: str = Field(max_length=40)
    from_state: str | None = Field(default=None, max_length=40)
    to_state: str | None = Field(default=None, max_length=40)
    reason: str = Field(default="", max_length=2000)
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONDoc, nullable=False))
