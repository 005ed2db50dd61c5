"""API shapes of systems: what a submitter sends and what anyone with access reads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.db import storable

CURRENCY_PATTERN = r"^[A-Z]{3}$"


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
    max_concurrency: int | None = Field(
        None, ge=1, le=10_000_000, description="declared C_max of its curves (region coverage)"
    )
    price_per_hour: float | None = Field(
        None, ge=0, le=1e9, description="what running the system costs per hour, in `currency`"
    )
    currency: str = Field("USD", pattern=CURRENCY_PATTERN, description="ISO 4217, e.g. USD")

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return storable(value)


class SystemCreate(SystemBase):
    organisation: str | None = Field(
        None, description="operators only: create for this organisation (default: own)"
    )


class SystemUpdate(BaseModel):
    """PATCH /v1/systems/{id}: pricing, declared C_max and descriptive metadata.

    Only the fields sent change. `price_per_hour` and `max_concurrency` may be sent as null
    to clear them; the other fields may not. The name stays: submissions refer to it.
    """

    model_config = ConfigDict(extra="forbid")

    price_per_hour: float | None = Field(None, ge=0, le=1e9)
    currency: str | None = Field(None, pattern=CURRENCY_PATTERN)
    max_concurrency: int | None = Field(None, ge=1, le=10_000_000)
    accelerator_model: str | None = Field(None, max_length=100)
    accelerator_count: int | None = Field(None, ge=0, le=1_000_000)
    nodes: int | None = Field(None, ge=1, le=100_000)
    runtime: str | None = Field(None, max_length=100)
    runtime_version: str | None = Field(None, max_length=50)
    model: str | None = Field(None, max_length=200)
    precision: str | None = Field(None, max_length=30)
    topology: dict[str, Any] | None = None
    description: str | None = Field(None, max_length=4000)

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return storable(value)

    @field_validator(
        "currency",
        "accelerator_model",
        "accelerator_count",
        "nodes",
        "runtime",
        "runtime_version",
        "model",
        "precision",
        "topology",
        "description",
    )
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("may be left out, not null")
        return value

    def changes(self) -> dict[str, Any]:
        """The fields sent (a null price or C_max clears it)."""
        return {name: getattr(self, name) for name in sorted(self.model_fields_set)}


class SystemPublic(SystemBase):
    model_config = ConfigDict(extra="forbid", from_attributes=True)

    id: int
    organisation_id: int
    created_at: datetime
