"""SLO profile documents: the `limits` a buyer sets, and the API shapes of profiles.

A latency limit names its percentile because "TTFT under 1 s" means nothing until one says
for how many requests: p99 of 1 s and p50 of 1 s are different promises. Only percentiles
that result summaries carry (orchestrator.stats.PERCENTILES: the reference client's set) may
be named — a limit on a figure no point can have would refuse every point for no reason.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.cost.schemas import PointCostPublic, cost_public
from orchestrator.db import storable
from orchestrator.stats import PERCENTILES

if TYPE_CHECKING:
    from orchestrator.slo.admissibility import Admissibility
    from orchestrator.slo.ranking import Ranking

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
LATENCY_LIMITS = ("ttft_ms", "tpot_ms", "latency_ms")
LIMIT_NAMES = (*LATENCY_LIMITS, "error_rate")


class LatencyLimit(BaseModel):
    """At most `max` milliseconds at the `percentile` of one latency distribution."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    percentile: float = Field(description="one of the percentiles result summaries carry")
    max: float = Field(gt=0, description="milliseconds")

    @field_validator("percentile")
    @classmethod
    def _known(cls, value: float) -> float:
        if not math.isfinite(value) or float(value) not in PERCENTILES:
            known = ", ".join(f"{p:g}" for p in sorted(PERCENTILES))
            raise ValueError(f"{value!r} is not a percentile summaries carry ({known})")
        return float(value)

    @field_validator("max")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number of milliseconds")
        return value


class SloLimits(BaseModel):
    """The `limits` document of a profile; a profile without any limit is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttft_ms: LatencyLimit | None = Field(None, description="time to first token")
    tpot_ms: LatencyLimit | None = Field(None, description="time per output token (streaming)")
    latency_ms: LatencyLimit | None = Field(None, description="whole request")
    error_rate: float | None = Field(None, ge=0, le=1, description="failed / issued, at most")

    @model_validator(mode="after")
    def _some_limit(self) -> SloLimits:
        if all(getattr(self, name) is None for name in LIMIT_NAMES):
            raise ValueError(
                "an SLO profile needs at least one limit: ttft_ms, tpot_ms, latency_ms "
                "or error_rate"
            )
        return self

    def document(self) -> dict[str, Any]:
        """The stored form: only the limits that are set."""
        return self.model_dump(mode="json", exclude_none=True)


class SloProfileCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="lower case, digits, . _ -")
    description: str = Field("", max_length=2000)
    limits: SloLimits

    @field_validator("description")
    @classmethod
    def _storable(cls, value: str) -> str:
        return str(storable(value))


class SloProfileUpdate(BaseModel):
    """PUT /v1/slo-profiles/{name}: the whole profile but its name."""

    model_config = ConfigDict(extra="forbid")

    description: str = Field("", max_length=2000)
    limits: SloLimits

    @field_validator("description")
    @classmethod
    def _storable(cls, value: str) -> str:
        return str(storable(value))


class SloProfilePublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    description: str
    limits: SloLimits
    source: str = Field(description="api, or the YAML file it was loaded from")
    created_by: str
    created_at: datetime
    updated_at: datetime


class ReasonPublic(BaseModel):
    limit: str
    passed: bool | None = Field(description="None: the figure was not measured")
    measured: float | None
    threshold: float | None
    message: str


class AdmissibilityPublic(BaseModel):
    point_id: int
    slo: str
    admissible: bool
    quality: str = Field(description='"passed", "failed" or "not measured"')
    quality_note: str
    reasons: list[ReasonPublic]


class RankRowPublic(BaseModel):
    system_id: int
    system: str = Field(description="organisation/name")
    points: int = Field(description="live accepted points on the workload")
    admissible_points: int
    best_qps: float | None
    best_qps_point_id: int | None
    best_qps_concurrency: int | None
    best_tps: float | None
    best_tps_point_id: int | None
    best_tps_concurrency: int | None
    cost: PointCostPublic | None = Field(description="at the best-QPS point")
    reason: str = Field(description="why no point is admissible; empty when one is")


class RankingPublic(BaseModel):
    workload: str
    workload_version: int
    slo: str
    limits: SloLimits
    quality: str
    quality_note: str
    rows: list[RankRowPublic]


def admissibility_public(
    verdict: Admissibility, *, point_id: int, slo: str, quality_note: str
) -> AdmissibilityPublic:
    return AdmissibilityPublic(
        point_id=point_id,
        slo=slo,
        admissible=verdict.admissible,
        quality=verdict.quality,
        quality_note=quality_note,
        reasons=[ReasonPublic.model_validate(asdict(r)) for r in verdict.reasons],
    )


def ranking_public(ranking: Ranking) -> RankingPublic:
    rows = []
    for row in ranking.rows:
        doc = {k: v for k, v in vars(row).items() if k != "cost"}
        cost = cost_public(row.cost, quality_note=ranking.quality_note) if row.cost else None
        rows.append(RankRowPublic.model_validate({**doc, "cost": cost}))
    return RankingPublic(
        workload=ranking.workload,
        workload_version=ranking.workload_version,
        slo=ranking.slo,
        limits=ranking.limits,
        quality=ranking.quality,
        quality_note=ranking.quality_note,
        rows=rows,
    )
