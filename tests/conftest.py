"""Shared fixtures: databases built by the real migrations, on SQLite and PostgreSQL.

PostgreSQL is the one on 127.0.0.1:5432 (trust auth); each test database is created fresh
and dropped afterwards. Under CI a missing server fails the run: there is no skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_ADMIN_URL = os.environ.get("ROLLBENCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'rollbench.db'}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    import psycopg

    name = f"rb_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        raise RuntimeError(
            f"PostgreSQL is required for this test ({PG_ADMIN_URL}); .ci/run starts it: {exc}"
        ) from exc
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    try:
        yield f"{base.replace('postgresql://', 'postgresql+psycopg://')}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Both embedded and distributed stores."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))
