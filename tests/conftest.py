"""Shared fixtures: databases built by the real migrations, on SQLite and PostgreSQL, and
an API on such a store with a token per role (`api`; NullDispatcher: no worker runs, so
submissions stay queued).

PostgreSQL is the one on 127.0.0.1:5432 (trust auth); each test database is created fresh
and dropped afterwards. Under CI a missing server fails the run: there is no skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from orchestrator import migrate
from orchestrator.auth.models import Role
from orchestrator.auth.service import create_token
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope
from orchestrator.dispatch import NullDispatcher

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


@dataclass
class Tokens:
    alice: str  # submitter, org "acme"
    bob: str  # submitter, org "globex"
    operator: str  # operator, org "mlc"
    viewer: str  # viewer, org "public"


@pytest.fixture
def api(
    db_url: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[TestClient, Tokens]]:
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    with session_scope(engine) as session:
        tokens = Tokens(
            alice=create_token(session, organisation="acme", role=Role.SUBMITTER)[1],
            bob=create_token(session, organisation="globex", role=Role.SUBMITTER)[1],
            operator=create_token(session, organisation="mlc", role=Role.OPERATOR)[1],
            viewer=create_token(session, organisation="public", role=Role.VIEWER)[1],
        )
    with TestClient(create_app(engine, NullDispatcher()), raise_server_exceptions=False) as client:
        yield client, tokens
    engine.dispose()
    get_settings.cache_clear()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
