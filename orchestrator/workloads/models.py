"""The workload table: definitions loaded from configs/workloads/*.yaml, versioned by name."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from orchestrator.db import JSONDoc, timestamp_column, utcnow


class Workload(SQLModel, table=True):
    __tablename__ = "workload"
    __table_args__ = (UniqueConstraint("name", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=100, index=True)
    version: int = Field(ge=1)
    definition: dict[str, Any] = Field(sa_column=Column(JSONDoc, nullable=False))
    sha256: str = Field(max_length=64, description="of the canonical definition")
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
