"""API shapes of the review workflow: decisions, replies, publication, and what a reviewer reads.

Comments are bounded by the store's columns (4000 characters) and must be storable text on
both stores (no NUL, no lone surrogates).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.db import MAX_ID, storable
from orchestrator.review.models import MAX_COMMENT_CHARS, ReviewAction
from orchestrator.runs.models import PointState
from orchestrator.submissions.models import Publication
from orchestrator.submissions.schemas import FindingsSummary, SubmissionPublic

MAX_DECISIONS = 1000


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return storable(value)


class DecisionIn(_Input):
    point_id: int = Field(ge=1, le=MAX_ID)
    decision: Literal["accept", "reject"]
    comment: str = Field("", max_length=MAX_COMMENT_CHARS, description="required to reject")


class DecideIn(_Input):
    decisions: list[DecisionIn] = Field(min_length=1, max_length=MAX_DECISIONS)
    comment: str = Field(
        "", max_length=MAX_COMMENT_CHARS, description="applies to decisions without their own"
    )


class ReplyIn(_Input):
    comment: str = Field(min_length=1, max_length=MAX_COMMENT_CHARS)
    point_id: int | None = Field(None, ge=1, le=MAX_ID, description="the point it concerns")


class PublicationIn(_Input):
    publication: Publication = Field(description="MLPerf publication status")
    comment: str = Field("", max_length=MAX_COMMENT_CHARS)


class FindingPublic(BaseModel):
    check: str
    severity: str
    passed: bool
    message: str
    point_id: int | None = None


class ReviewEntryPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    submission_id: int
    point_id: int | None
    action: ReviewAction
    actor: str
    comment: str
    data: dict[str, Any]
    at: datetime


class ReviewPointPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    run_id: int
    concurrency: int
    state: PointState
    metrics: dict[str, Any]
    created_at: datetime
    reviewed_by: str | None
    reviewed_at: datetime | None
    review_comment: str
    superseded_by: int | None
    blocking: list[str] = Field(
        default_factory=list, description="ids of failed error checks that prevent accepting it"
    )


class FrontierContext(BaseModel):
    """The curve the submission's points would join."""

    system_id: int
    workload_id: int
    version: int | None = Field(description="current frontier version; None: no curve yet")
    members: list[int] = Field(default_factory=list, description="live accepted points")
    pareto: list[int] = Field(default_factory=list, description="on the default axes")
    window_open: bool = Field(description="may this submission still add points to the curve")
    window_message: str = ""


class QueueItemPublic(BaseModel):
    submission_id: int
    organisation_id: int
    system_id: int
    system: str
    workload: str
    points: int
    undecided: int
    blocking: int
    warnings: int
    publication: Publication
    waiting_since: datetime | None = Field(description="when it entered review")


class QueueList(BaseModel):
    items: list[QueueItemPublic]
    total: int
    limit: int
    offset: int


class ReviewPublic(BaseModel):
    """Everything an operator needs to decide: the submission, its points with their
    figures, the checker's findings, the thread, and the curve the points would join."""

    submission: SubmissionPublic
    points: list[ReviewPointPublic]
    findings: list[FindingPublic]
    findings_summary: FindingsSummary
    thread: list[ReviewEntryPublic]
    frontier: FrontierContext
