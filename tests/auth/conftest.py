"""Fixtures of the auth and secrets tests: settings pointed at tmp_path, a migrated store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from orchestrator import migrate
from orchestrator.config import get_settings
from orchestrator.db import make_engine


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """ROLLBENCH_DATA_DIR at a fresh folder, no env keys, no database URL, settings re-read."""
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ROLLBENCH_SECRET_KEYS", raising=False)
    monkeypatch.delenv("ROLLBENCH_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


@pytest.fixture
def engine(db_url: str, data_dir: Path) -> Iterator[Engine]:
    """An engine on a store built by the migrations (SQLite and PostgreSQL)."""
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    yield engine
    engine.dispose()
