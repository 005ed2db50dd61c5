"""Tables of organisations and their API tokens (stored hashed, never in clear)."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlmodel import Field, SQLModel

from orchestrator.db import enum_type, timestamp_column, utcnow


class Role(enum.StrEnum):
    SUBMITTER = "submitter"  # its own organisation's systems, endpoints and submissions
    OPERATOR = "operator"  # everything: review, campaigns, every organisation
    VIEWER = "viewer"  # read only


class Organisation(SQLModel, table=True):
    __tablename__ = "organisation"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=100, unique=True, index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())


class ApiToken(SQLModel, table=True):
    __tablename__ = "api_token"

    id: int | None = Field(default=None, primary_key=True)
    organisation_id: int = Field(foreign_key="organisation.id", index=True)
    role: Role = Field(sa_type=enum_type(Role, 16))
    # sha256 of the secret: tokens are 256-bit random, so a fast hash is enough
    token_hash: str = Field(max_length=64, unique=True)
    prefix: str = Field(max_length=16, description="first characters, to recognise a token")
    label: str = Field(default="", max_length=200)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamp_column())
    last_used_at: datetime | None = Field(default=None, sa_column=timestamp_column(True))
    revoked_at: datetime | None = Field(default=None, sa_column=timestamp_column(True))
