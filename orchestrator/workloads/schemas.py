"""The workload definition format (configs/workloads/*.yaml) and its API shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from orchestrator.loadgen.spec import SyntheticSpec


class DatasetDef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    synthetic: SyntheticSpec | None = None
    path: str | None = Field(None, description="JSONL file, relative to the project root")

    @model_validator(mode="after")
    def _one(self) -> DatasetDef:
        if (self.synthetic is None) == (self.path is None):
            raise ValueError("give exactly one of synthetic or path")
        return self


class GenerationDef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0)
    seed: int | None = None
    system: str | None = None


class MeasurementDef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    requests_per_level: int | None = Field(200, ge=1)
    min_duration_s: float | None = Field(None, gt=0)
    warmup: int = Field(0, ge=0)


class WorkloadDef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    version: int = Field(ge=1)
    description: str = ""
    dataset: DatasetDef
    generation: GenerationDef = Field(default_factory=GenerationDef)
    measurement: MeasurementDef = Field(default_factory=MeasurementDef)
    accuracy_suite: str | None = None
    default_slo: str | None = None


class WorkloadPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    version: int
    definition: dict[str, Any]
    sha256: str
    created_at: datetime
