"""The endpoint table. Credentials and extra headers are stored encrypted, never in clear."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import LargeBinary
from sqlmodel import Column, Field, SQLModel

from orchestrator.db import enum_type, timestamp_column, utcnow


class ApiFlavour(enum.StrEnum):
    OPENAI_CHAT = "openai-chat"
    OPENAI_COMPLETIONS = "openai-completions"


class EndpointState(enum.StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    RETIRED = "retired"


class Endpoint(SQLModel, table=True):
    __tablename__ = "endpoint"

    id: int | None = Field(default=None, primary_key=True)
    organisation_id: int = Field(foreign_key="organisation.id", index=True)
    system_id: int = Field(foreign_key="system.id", index=True)
    base_url: str = Field(max_length=2000)
    api: ApiFlavour = Field(sa_type=enum_type(ApiFlavour, 32))
    served_model: str = Field(max_length=200)
    # Fernet token of {"api_key": ..., "headers": {...}}; `key_id` names the key that sealed it
    secrets_sealed: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    secrets_key_id: str | None = Field(default=None, max_length=32)
    verify_tls: bool = True
    region: str = Field(default="", max_length=50)
    state: EndpointState = Field(default=EndpointState.ACTIVE, sa_type=enum_type(EndpointState, 16))
    # Token pricing of a serviced endpoint (per million tokens); a system's hourly price
    # is the other way to price a point.
    input_price_per_mtok: float | None = Field(default=None, ge=0)
    output_price_per_mtok: float | None = Field(default=None, ge=0)
    currency: str = Field(default="USD", max_length=3)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
