"""The system table: what a submitter declares about the system behind its endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from orchestrator.db import JSONDoc, timestamp_column, utcnow


class System(SQLModel, table=True):
    __tablename__ = "system"
    __table_args__ = (UniqueConstraint("organisation_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    organisation_id: int = Field(foreign_key="organisation.id", index=True)
    name: str = Field(max_length=100)
    accelerator_model: str = Field(default="", max_length=100)
    accelerator_count: int = Field(default=0, ge=0)
    nodes: int = Field(default=1, ge=1)
    runtime: str = Field(default="", max_length=100, description="serving runtime, e.g. vLLM")
    runtime_version: str = Field(default="", max_length=50)
    model: str = Field(default="", max_length=200)
    precision: str = Field(default="", max_length=30)
    topology: dict[str, Any] = Field(
        default_factory=dict,
        sa_column=Column(JSONDoc, nullable=False),
        description="tensor/pipeline/data/expert parallel, disaggregation, ...",
    )
    description: str = Field(default="", max_length=4000)
    max_concurrency: int | None = Field(
        default=None, ge=1, description="declared C_max of its curves (MLPerf region coverage)"
    )
    price_per_hour: float | None = Field(
        default=None, ge=0, description="what the system costs to run, per hour"
    )
    currency: str = Field(default="USD", max_length=3)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
