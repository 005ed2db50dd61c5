"""Fixtures of the frontier tests: a migrated store with a row builder, and the API.

Rows are built directly with the ORM (organisation, system, workload, submission, run,
point), as the review service would leave them: points ACCEPTED and flushed before the
frontier is asked to change.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from api.app import create_app
from orchestrator import migrate
from orchestrator.auth.models import Organisation, Role
from orchestrator.auth.service import create_token
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope, utcnow
from orchestrator.dispatch import NullDispatcher
from orchestrator.frontier.models import FrontierVersion
from orchestrator.frontier.service import apply_change
from orchestrator.runs.models import Point, PointState, Run, RunKind, RunState
from orchestrator.submissions.models import Submission, SubmissionSource, SubmissionState
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload


def metrics_for(
    concurrency: int, *, tps: float | None, tpot_p90_ms: float | None, **extra: Any
) -> dict[str, Any]:
    """Figures shaped like point_metrics' output, from the two that place a point."""
    doc: dict[str, Any] = {
        "concurrency": concurrency,
        "tps": tps,
        "tpot_p90_ms": tpot_p90_ms,
        "tps_per_user_v1": 1000.0 / tpot_p90_ms if tpot_p90_ms else None,
        "tps_per_user_v07": tps / concurrency if tps is not None else None,
        "qps": (tps or 0.0) / 100.0,
        "ttft_p99_ms": 50.0 + concurrency,
        "ttft_p90_ms": 40.0 + concurrency,
        "tpot_p99_ms": (tpot_p90_ms or 0.0) * 1.2 or None,
        "error_rate": 0.0,
        "latency_avg_ms": 1000.0,
    }
    doc.update(extra)
    return doc


@dataclass
class World:
    """Builds rows in one store; every method commits, so tests read what they wrote."""

    engine: Engine
    _runs: int = 0
    orgs: dict[str, int] = field(default_factory=dict)

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    def org(self, name: str) -> int:
        if name not in self.orgs:
            with self.session() as s:
                row = Organisation(name=name)
                s.add(row)
                s.commit()
                assert row.id is not None
                self.orgs[name] = row.id
        return self.orgs[name]

    def system(self, name: str, org: str = "acme") -> int:
        with self.session() as s:
            row = System(organisation_id=self.org(org), name=name, max_concurrency=64)
            s.add(row)
            s.commit()
            assert row.id is not None
            return row.id

    def workload(self, name: str = "chat", version: int = 1) -> int:
        with self.session() as s:
            row = Workload(name=name, version=version, definition={"name": name}, sha256="0" * 64)
            s.add(row)
            s.commit()
            assert row.id is not None
            return row.id

    def submission(
        self,
        system_id: int,
        workload_id: int,
        *,
        source: SubmissionSource = SubmissionSource.MEASURED,
    ) -> int:
        with self.session() as s:
            system = s.get(System, system_id)
            assert system is not None
            row = Submission(
                organisation_id=system.organisation_id,
                system_id=system_id,
                workload_id=workload_id,
                levels=[1],
                state=SubmissionState.IN_REVIEW,
                source=source,
            )
            s.add(row)
            s.commit()
            assert row.id is not None
            return row.id

    def apply(
        self,
        system_id: int,
        workload_id: int,
        ids: list[int],
        *,
        submission_id: int | None = None,
        now: datetime | None = None,
        actor: str = "operator",
    ) -> FrontierVersion | None:
        """apply_change on points `ids`, committed; the version it wrote."""
        with self.session() as s:
            points = [s.get(Point, i) for i in ids]
            version = apply_change(
                s,
                system_id=system_id,
                workload_id=workload_id,
                accepted=[p for p in points if p is not None],
                actor=actor,
                submission_id=submission_id,
                now=now,
            )
            s.commit()
            return version

    def point(self, point_id: int) -> Point:
        with self.session() as s:
            row = s.get(Point, point_id)
            assert row is not None
            return row

    def points(
        self,
        submission_id: int,
        specs: list[tuple[int, float | None, float | None]],
        *,
        state: PointState = PointState.ACCEPTED,
        created_at: datetime | None = None,
        **extra: Any,
    ) -> list[int]:
        """One point per (concurrency, tps, tpot_p90_ms); ids in the order given."""
        ids = []
        with self.session() as s:
            sub = s.get(Submission, submission_id)
            assert sub is not None
            for i, (conc, tps, tpot) in enumerate(specs):
                self._runs += 1
                run = Run(
                    submission_id=submission_id,
                    run_key=f"{submission_id}:{self._runs}",
                    kind=RunKind.PERFORMANCE,
                    position=i,
                    level=float(conc),
                    state=RunState.FINISHED,
                )
                s.add(run)
                s.flush()
                assert run.id is not None
                point = Point(
                    submission_id=submission_id,
                    run_id=run.id,
                    system_id=sub.system_id,
                    workload_id=sub.workload_id,
                    concurrency=conc,
                    state=state,
                    metrics=metrics_for(conc, tps=tps, tpot_p90_ms=tpot, **extra),
                    created_at=(created_at or utcnow()) + timedelta(microseconds=i),
                    reviewed_by="operator" if state is PointState.ACCEPTED else None,
                    reviewed_at=utcnow() if state is PointState.ACCEPTED else None,
                )
                s.add(point)
                s.flush()
                assert point.id is not None
                ids.append(point.id)
            s.commit()
        return ids


@pytest.fixture
def world(db_url: str) -> Iterator[World]:
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    yield World(engine)
    engine.dispose()


def use_programme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window_days: float) -> None:
    """Run under a programme whose update window is `window_days`."""
    path = tmp_path / f"programme-{window_days:g}.yaml"
    path.write_text(f"name: test\nupdate_window_days: {window_days}\n")
    monkeypatch.setenv("ROLLBENCH_PROGRAMME_FILE", str(path))
    get_settings.cache_clear()


@dataclass
class Tokens:
    alice: str  # submitter, org "acme"
    bob: str  # submitter, org "globex"
    operator: str  # operator, org "mlc"
    viewer: str  # viewer, org "public"


@dataclass
class ApiWorld:
    client: TestClient
    tokens: Tokens
    world: World

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {getattr(self.tokens, who)}"}


@pytest.fixture
def api(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiWorld]:
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
    world = World(engine)
    with Session(engine) as s:
        for org in s.exec(select(Organisation)).all():
            assert org.id is not None
            world.orgs[org.name] = org.id
    with TestClient(create_app(engine, NullDispatcher()), raise_server_exceptions=False) as client:
        yield ApiWorld(client, tokens, world)
    engine.dispose()
    get_settings.cache_clear()
