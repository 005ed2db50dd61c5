"""SLO profiles: latency and error limits that decide which points are admissible."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Column, Field, SQLModel

from orchestrator.db import JSONDoc, timestamp_column, utcnow


class SloProfile(SQLModel, table=True):
    __tablename__ = "slo_profile"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=100, unique=True)
    description: str = Field(default="", max_length=2000)
    # the validated `SloLimits` document (orchestrator.slo.schemas)
    limits: dict[str, Any] = Field(sa_column=Column(JSONDoc, nullable=False))
    source: str = Field(default="api", max_length=200, description="api, or the YAML file")
    created_by: str = Field(default="", max_length=100)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
    updated_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
