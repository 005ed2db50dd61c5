"""API shapes of systems: what a submitter sends and what anyone with access reads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.db import storable


class SystemBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._ -]*$")
    accelerator_model: str = Field("", max_length=100)
    accelerator_count: int = Field(0, ge=0, le=1_000_000)
    nodes: int = Field(1, ge=1, le=100_000)
    runtime: str = Field("", max_length=100, description="serving runtime, e.g. vLLM")
    runtime_version: str = Field("", max_length=50)
    model: str = Field("", max_length=200)
    precision: str = Field("", max_length=30)
    topology: dict[str, Any] = Field(
        default_factory=dict, description="tensor/pipeline/data/expert parallel, ..."
    )
    description: str = Field("", max_length=4000)

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return storable(value)


class SystemCreate(SystemBase):
    organisation: str | None = Field(
        None, description="operators only: create for this organisation (default: own)"
    )


class SystemPublic(SystemBase):
    model_config = ConfigDict(extra="forbid", from_attributes=True)

    id: int
    organisation_id: int
    created_at: datetime
