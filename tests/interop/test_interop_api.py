"""GET /v1/points/{id}/run_metadata.json and /result_summary.json: who may read what."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from interop.interop_helpers import REFERENCE
from sqlmodel import select

from api.app import create_app
from orchestrator import migrate
from orchestrator.auth.models import Organisation, Role
from orchestrator.auth.service import create_token
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope
from orchestrator.dispatch import NullDispatcher
from orchestrator.interop.importer import import_mlperf
from orchestrator.runs.models import PointState
from orchestrator.systems.models import System
from orchestrator.workloads.service import resolve, sync_workloads


@dataclass
class World:
    client: TestClient
    tokens: dict[str, str]
    accepted: int
    candidate: int


def get(world: World, who: str | None, path: str) -> tuple[int, object]:
    headers = {"Authorization": f"Bearer {world.tokens[who]}"} if who else {}
    response = world.client.get(path, headers=headers)
    return response.status_code, response.json()


@pytest.fixture
def world(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    with session_scope(engine) as s:
        tokens = {
            "alice": create_token(s, organisation="acme", role=Role.SUBMITTER)[1],
            "bob": create_token(s, organisation="globex", role=Role.SUBMITTER)[1],
            "operator": create_token(s, organisation="mlc", role=Role.OPERATOR)[1],
            "viewer": create_token(s, organisation="public", role=Role.VIEWER)[1],
        }
        sync_workloads(s)
        acme = s.exec(select(Organisation).where(Organisation.name == "acme")).one()
        system = System(name="acme-sys", organisation_id=acme.id)
        s.add(system)
        s.flush()
        wl = resolve(s, name="synthetic-chat")
        [accepted] = import_mlperf(
            s, path=REFERENCE / "run_conc16", system=system, workload=wl, actor="t"
        ).points
        [other] = import_mlperf(
            s, path=REFERENCE / "run_flaky", system=system, workload=wl, actor="t"
        ).points
        # an unpublished point of acme: a candidate (as if still under review)
        other.state = PointState.CANDIDATE
        s.add(other)
        ids = (accepted.id, other.id)
    with TestClient(create_app(engine, NullDispatcher()), raise_server_exceptions=False) as c:
        assert ids[0] is not None and ids[1] is not None
        yield World(c, tokens, ids[0], ids[1])
    engine.dispose()
    get_settings.cache_clear()


ROUTES = ("run_metadata.json", "result_summary.json")


@pytest.mark.parametrize("route", ROUTES)
def test_an_accepted_point_is_readable_by_any_token(world: World, route: str) -> None:
    for who in ("alice", "bob", "operator", "viewer"):
        status, body = get(world, who, f"/v1/points/{world.accepted}/{route}")
        assert status == 200, (who, body)
        assert isinstance(body, dict)
    status, _ = get(world, None, f"/v1/points/{world.accepted}/{route}")
    assert status == 401


@pytest.mark.parametrize("route", ROUTES)
def test_an_unpublished_point_follows_its_organisation(world: World, route: str) -> None:
    for who in ("alice", "operator", "viewer"):
        status, _ = get(world, who, f"/v1/points/{world.candidate}/{route}")
        assert status == 200, who
    foreign = get(world, "bob", f"/v1/points/{world.candidate}/{route}")
    missing = get(world, "bob", f"/v1/points/999999/{route}")
    assert foreign[0] == missing[0] == 404
    assert json.dumps(foreign[1]).replace(str(world.candidate), "N") == json.dumps(
        missing[1]
    ).replace("999999", "N")
    for bad in ("0", "abc", "99999999999999999999"):
        status, body = get(world, "alice", f"/v1/points/{bad}/{route}")
        assert status == 422, (bad, body)


def test_the_documents_carry_the_files_figures(world: World) -> None:
    doc = json.loads((REFERENCE / "run_flaky/performance/result_summary.json").read_text())
    _, meta = get(world, "alice", f"/v1/points/{world.candidate}/run_metadata.json")
    assert isinstance(meta, dict)
    assert meta["measured_total_requests"] == 200 and meta["concurrency"] == 16
    assert meta["qps"] == pytest.approx(doc["qps"])
    assert meta["ttft"] == pytest.approx(doc["ttft"]["percentiles"]["99.0"] / 1e6)
    _, summary = get(world, "alice", f"/v1/points/{world.candidate}/result_summary.json")
    assert isinstance(summary, dict)
    assert summary["duration_ns"] == doc["duration_ns"]
    assert summary["n_samples_completed"] + summary["n_samples_failed"] == 200
    assert summary["tps_per_user"] == pytest.approx(1e9 / doc["tpot"]["percentiles"]["90.0"])
