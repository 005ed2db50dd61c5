"""The store: engine and session factory, and the metadata naming convention.

The naming convention is set on SQLModel's metadata here, before any table model is
imported, so that every constraint and index has a stable name that migrations can refer
to on both SQLite and PostgreSQL. SQLite runs in WAL mode with a busy timeout, so that the
API, a worker and the scheduler can share one embedded database file.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import JSON, Column, DateTime, Dialect, TypeDecorator, event
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

# Ids are INTEGER columns, 32-bit on PostgreSQL: a larger number names no row, and binding one
# is an error in the store (on SQLite past 2**63), so every id an API accepts is bounded by it.
MAX_ID = 2**31 - 1


def storable(value: Any) -> Any:
    """`value` unchanged if both stores can hold it, else ValueError saying why.

    For input validators: PostgreSQL refuses NUL characters in text and JSONB, JSON has no
    NaN or infinities, and no store encodes a lone surrogate — all of which Python's JSON
    parser lets through. Walks nested lists and dicts without recursion.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ValueError("must not contain NUL characters")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("must be valid Unicode (no lone surrogates)") from None
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError("must be a finite number")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value


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


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp, written and read back in UTC on every store.

    SQLite keeps no zone: plain DateTime would store an aware time's wall clock as it is (an
    input at +02:00 would move by two hours) and read naive values back, which the API would
    then print without an offset. A naive input is taken to be UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def timestamp_column(nullable: bool = False, **kwargs: Any) -> Column[datetime]:
    """A timezone-aware timestamp column (UTC)."""
    return Column(UTCDateTime(), nullable=nullable, **kwargs)


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
