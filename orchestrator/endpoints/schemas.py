"""API shapes of endpoints. Credentials are write-only: no read shape carries them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from orchestrator.db import MAX_ID, storable
from orchestrator.endpoints.models import ApiFlavour, EndpointState
from orchestrator.systems.schemas import CURRENCY_PATTERN


class EndpointBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system_id: int = Field(ge=1, le=MAX_ID)
    base_url: str = Field(min_length=8, max_length=2000, description="e.g. https://host/v1")
    api: ApiFlavour = ApiFlavour.OPENAI_CHAT
    served_model: str = Field(min_length=1, max_length=200)
    verify_tls: bool = True
    region: str = Field("", max_length=50)
    # token pricing, per million tokens, in `currency` (cost bands of its points)
    input_price_per_mtok: float | None = Field(None, ge=0, le=1e9)
    output_price_per_mtok: float | None = Field(None, ge=0, le=1e9)
    currency: str = Field("USD", pattern=CURRENCY_PATTERN, description="ISO 4217, e.g. USD")

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return storable(value)


class EndpointCreate(EndpointBase):
    api_key: SecretStr | None = Field(None, max_length=4096, description="write-only")
    headers: dict[str, str] = Field(
        default_factory=dict, max_length=32, description="extra headers; write-only"
    )
    check: bool = Field(True, description="ask GET {base_url}/models before registering")


class EndpointUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: EndpointState | None = None
    api_key: SecretStr | None = Field(None, max_length=4096)
    verify_tls: bool | None = None
    region: str | None = Field(None, max_length=50)
    # sent as null, a price is cleared; left out, it stays
    input_price_per_mtok: float | None = Field(None, ge=0, le=1e9)
    output_price_per_mtok: float | None = Field(None, ge=0, le=1e9)
    currency: str | None = Field(None, pattern=CURRENCY_PATTERN)

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return storable(value)


class EndpointPublic(EndpointBase):
    model_config = ConfigDict(extra="forbid", from_attributes=True)

    id: int
    organisation_id: int
    state: EndpointState
    has_api_key: bool
    header_names: list[str]
    created_at: datetime
