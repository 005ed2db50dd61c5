"""API shapes of submissions and their runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.db import MAX_ID, storable
from orchestrator.runs.models import RunKind, RunState
from orchestrator.submissions.models import Publication, SubmissionSource, SubmissionState

MAX_LEVELS = 32  # MLPerf Endpoints caps a curve at 32 points
# A concurrency, or a request rate (poisson); bounded in the schema so the OpenAPI says so.
Level = Annotated[float, Field(gt=0, le=1_000_000)]


class SubmissionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system_id: int = Field(ge=1, le=MAX_ID)
    endpoint_id: int = Field(ge=1, le=MAX_ID)
    workload: str = Field(min_length=1, max_length=100)
    workload_version: int | None = Field(None, ge=1, le=MAX_ID)
    server_config: dict[str, Any] = Field(
        default_factory=dict, description="snapshot of the serving configuration"
    )
    pattern: Literal["concurrency", "poisson", "offline"] = "concurrency"
    levels: list[Level] = Field(min_length=1, max_length=MAX_LEVELS, description="distinct")
    requests: int | None = Field(
        None, ge=1, le=10_000_000, description="per level; default: workload's"
    )
    min_duration_s: float | None = Field(None, gt=0, le=7 * 86400)
    warmup: int | None = Field(None, ge=0, le=1_000_000)
    accuracy_required: bool = False
    not_before: datetime | None = None
    not_after: datetime | None = None

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return storable(value)

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[float]) -> list[float]:
        if len(set(v)) != len(v):
            raise ValueError("levels must be distinct")
        return v


class RunPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    submission_id: int
    kind: RunKind
    position: int
    level: float
    state: RunState
    attempts: int
    started_at: datetime | None
    finished_at: datetime | None
    progress: dict[str, Any]
    summary: dict[str, Any] | None
    artifact_sha256: str | None
    error: str | None


def summarise(findings: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Counts of stored findings: total, passed, failed, blocking (failed errors), warnings."""
    failed = [f for f in findings if isinstance(f, Mapping) and f.get("passed") is False]
    return {
        "total": len(findings),
        "passed": sum(1 for f in findings if isinstance(f, Mapping) and f.get("passed") is True),
        "failed": len(failed),
        "blocking": sum(1 for f in failed if f.get("severity") == "error"),
        "warnings": sum(1 for f in failed if f.get("severity") != "error"),
    }


class FindingsSummary(BaseModel):
    """How the automated checker's last run went; `blocking` findings prevent acceptance."""

    total: int = 0
    passed: int = 0
    failed: int = 0
    blocking: int = 0
    warnings: int = 0


class SubmissionPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    organisation_id: int
    system_id: int
    endpoint_id: int | None
    workload_id: int
    state: SubmissionState
    pattern: str
    levels: list[float]
    requests: int | None
    min_duration_s: float | None
    warmup: int
    accuracy_required: bool
    server_config: dict[str, Any]
    not_before: datetime | None
    not_after: datetime | None
    cancel_requested: bool
    source: SubmissionSource
    publication: Publication = Field(description="MLPerf publication status")
    checked_at: datetime | None = Field(description="when the automated checker last ran")
    decided_at: datetime | None = Field(description="when review decided its last point")
    findings_summary: FindingsSummary = Field(
        default_factory=FindingsSummary,
        validation_alias="findings",
        description="counts of the checker's findings (the findings: GET .../review)",
    )
    created_at: datetime
    updated_at: datetime
    runs: list[RunPublic] = Field(default_factory=list)

    @field_validator("findings_summary", mode="before")
    @classmethod
    def _summary(cls, value: Any) -> Any:
        if isinstance(value, list):  # the stored findings, read from the table
            return summarise(value)
        return value
