"""API shapes of points (operating points offered for a frontier)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from orchestrator.runs.models import PointState


class PointPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    submission_id: int
    run_id: int
    system_id: int
    workload_id: int
    concurrency: int
    state: PointState
    metrics: dict[str, Any]
    created_at: datetime
