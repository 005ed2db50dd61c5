"""The store: engine and session factory, and the metadata naming convention.

The naming convention is set on SQLModel's metadata here, before any table model is
imported, so that every constraint and index has a stable name that migrations can refer
to on both SQLite and PostgreSQL. SQLite runs in WAL mode with a busy timeout, so that the
API, a worker and the scheduler can share one embedded database file.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import JSON, Column, DateTime, event
from sqlalchemy import Enum as SAEnum
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, SQLModel, create_engine, func, select
from sqlmodel.sql.expression import SelectOfScalar

T = TypeVar("T")

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
SQLModel.metadata.naming_convention = NAMING_CONVENTION

# JSON documents: JSONB on PostgreSQL (indexable, compact), JSON text elsewhere.
JSONDoc = JSON().with_variant(JSONB(), "postgresql")


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for `url`; SQLite gets WAL, foreign keys and a busy timeout."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, **kwargs
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, **kwargs)


@lru_cache(maxsize=4)
def engine_for(url: str) -> Engine:
    return make_engine(url)


def get_engine() -> Engine:
    from orchestrator.config import get_settings

    return engine_for(get_settings().resolved_database_url())


@contextmanager
def session_scope(engine: Engine | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    with Session(engine or get_engine(), expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def utcnow() -> datetime:
    return datetime.now(UTC)


def timestamp_column(nullable: bool = False, **kwargs: Any) -> Column[datetime]:
    """A timezone-aware timestamp column (UTC)."""
    return Column(DateTime(timezone=True), nullable=nullable, **kwargs)


def enum_type(enum_cls: type[enum.Enum], length: int = 32) -> SAEnum:
    """A portable enum column storing the members' values (not names), as VARCHAR + CHECK."""
    return SAEnum(
        enum_cls,
        native_enum=False,
        length=length,
        values_callable=lambda members: [m.value for m in members],
        validate_strings=True,
        name=enum_cls.__name__.lower(),
    )


def paginate(
    session: Session, query: SelectOfScalar[T], *, order_by: Any, limit: int, offset: int
) -> tuple[list[T], int]:
    """One page of `query` and the total number of rows it matches."""
    total = session.exec(select(func.count()).select_from(query.subquery())).one()
    rows = session.exec(query.order_by(order_by).offset(offset).limit(limit)).all()
    return list(rows), int(total)
