"""A migrated store (SQLite and PostgreSQL) with an organisation, a system and the workloads.

Imported files are copied under ROLLBENCH_DATA_DIR, which points at the test's tmp_path.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from orchestrator import migrate
from orchestrator.audit.models import AuditEntry
from orchestrator.auth.service import create_organisation
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope
from orchestrator.frontier.models import FrontierVersion
from orchestrator.runs.models import Point, Run
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System
from orchestrator.workloads.service import sync_workloads

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "mlperf-reference-client"
TABLES = (Submission, Run, Point, FrontierVersion, AuditEntry, System)


@dataclass
class Store:
    engine: Engine
    data_dir: Path

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    def counts(self) -> dict[str, int]:
        with self.session() as s:
            return {t.__name__: s.exec(select(func.count()).select_from(t)).one() for t in TABLES}

    def new_system(self, name: str, org: str = "acme", **fields: object) -> System:
        with session_scope(self.engine) as s:
            organisation = create_organisation(s, name=org)
            system = System(name=name, organisation_id=organisation.id, **fields)
            s.add(system)
            s.flush()
            return system


@pytest.fixture
def store(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    with session_scope(engine) as s:
        sync_workloads(s)
    yield Store(engine, tmp_path / "data")
    engine.dispose()
    get_settings.cache_clear()


def reference_copy(name: str, dest: Path, *, concurrency: int | None = None) -> Path:
    """A copy of a reference-client run folder, optionally moved to another concurrency."""
    target = dest / name if concurrency is None else dest / f"{name}-c{concurrency}"
    shutil.copytree(REFERENCE / name, target)
    if concurrency is not None:
        config_path = target / "config.yaml"
        config = yaml.safe_load(config_path.read_text())
        config["settings"]["load_pattern"]["target_concurrency"] = concurrency
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        summary = target / "performance" / "result_summary.json"
        text = summary.read_text().replace(
            '"target_concurrency": 16', f'"target_concurrency": {concurrency}'
        )
        summary.write_text(text)
    return target
