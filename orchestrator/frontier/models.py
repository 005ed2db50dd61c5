"""Frontier versions: every accepted change to a (system, workload) curve, kept for history."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from orchestrator.db import JSONDoc, timestamp_column, utcnow


class FrontierVersion(SQLModel, table=True):
    __tablename__ = "frontier_version"
    __table_args__ = (UniqueConstraint("system_id", "workload_id", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    system_id: int = Field(foreign_key="system.id", index=True)
    workload_id: int = Field(foreign_key="workload.id", index=True)
    version: int = Field(ge=1)
    # Every live accepted point of the curve at this version, and the Pareto set among them
    # on the default axes (per-user TPS, TPS); other axes are computed from `members`.
    members: list[int] = Field(default_factory=list, sa_column=Column(JSONDoc, nullable=False))
    pareto: list[int] = Field(default_factory=list, sa_column=Column(JSONDoc, nullable=False))
    added: list[int] = Field(default_factory=list, sa_column=Column(JSONDoc, nullable=False))
    superseded: list[int] = Field(default_factory=list, sa_column=Column(JSONDoc, nullable=False))
    dominated: list[int] = Field(
        default_factory=list,
        sa_column=Column(JSONDoc, nullable=False),
        description="points on the previous version's Pareto set that this change dominated",
    )
    submission_id: int | None = Field(default=None, foreign_key="submission.id")
    actor: str = Field(default="", max_length=100)
    reason: str = Field(default="", max_length=2000)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
