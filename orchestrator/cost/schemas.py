"""API shapes of a point's cost."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from orchestrator.cost.service import PointCost


class CostBandPublic(BaseModel):
    basis: str = Field(description='"hourly" (system price) or "tokens" (endpoint prices)')
    currency: str
    per_request_low: float
    per_request_high: float
    per_mtok_output_low: float | None
    per_mtok_output_high: float | None
    delivered_fraction: tuple[float, float]
    expected_attempts: float = Field(description="attempts per successful request, 1/(1−e)")
    collapsed: bool = Field(description="the band does not depend on the delivered fraction")
    note: str


class PointCostPublic(BaseModel):
    point_id: int
    slo: str
    admissible: bool
    quality_note: str
    bands: list[CostBandPublic]
    reason: str = Field(description="why there is no cost, or empty")


def cost_public(cost: PointCost, *, quality_note: str) -> PointCostPublic:
    """The API shape of an orchestrator.cost.service.PointCost."""
    return PointCostPublic.model_validate({**asdict(cost), "quality_note": quality_note})
