"""Alembic environment: rollbench's metadata, its database URL, batch mode on SQLite."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import orchestrator.models  # noqa: F401  (registers every table on the metadata)
from orchestrator.config import get_settings
from orchestrator.db import make_engine

config = context.config
MIGRATION_LOCK_ID = 7_261_535  # pg_advisory_xact_lock key: "rollbench migrations"
target_metadata = SQLModel.metadata


def _url() -> str:
    x = context.get_x_argument(as_dictionary=True)
    return x.get("url") or config.attributes.get("url") or get_settings().resolved_database_url()


def run_migrations_offline() -> None:
    url = _url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=url.startswith("sqlite"),
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def _run(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # type: ignore[attr-defined]
        compare_type=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":  # type: ignore[attr-defined]
            # one migrator at a time; the next reads the version after this one committed
            connection.exec_driver_sql(  # type: ignore[attr-defined]
                f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_ID})"
            )
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
