"""The `api` fixture of tests/api/conftest.py, for the SLO, ranking, cost and pricing routes.

The dispatcher is `NullDispatcher`: no worker runs here, so submissions stay queued.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from orchestrator import migrate
from orchestrator.auth.models import Role
from orchestrator.auth.service import create_token
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope
from orchestrator.dispatch import NullDispatcher


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
