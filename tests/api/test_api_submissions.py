"""Submissions end to end: REST → store → a real Celery worker process → results over REST.

Embedded mode: SQLite store and kombu's SQLAlchemy broker on SQLite, under a temporary
DATA_DIR; the worker is `rollbench worker` in its own process; the endpoint is the simulator.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from orchestrator import migrate
from orchestrator.auth.models import Role
from orchestrator.auth.service import create_token
from orchestrator.config import get_settings
from orchestrator.db import get_engine, session_scope
from orchestrator.simulator import Simulator, SimulatorConfig, start_in_thread
from orchestrator.workloads.service import sync_workloads
from workers.dispatch import CeleryDispatcher

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ROLLBENCH_DATABASE_URL", raising=False)
    monkeypatch.delenv("ROLLBENCH_BROKER_URL", raising=False)
    get_settings.cache_clear()
    from workers.app import reconfigure

    reconfigure()
    url = get_settings().resolved_database_url()
    migrate.upgrade(url)
    engine = get_engine()
    with session_scope(engine) as session:
        sync_workloads(session)
        _, token = create_token(session, organisation="acme", role=Role.SUBMITTER)
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "worker"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ROLLBENCH_DATA_DIR": str(tmp_path)},
    )
    sim_cm = start_in_thread(SimulatorConfig(ttft_ms=5, tpot_ms=1, output_tokens=16))
    sim: Simulator = sim_cm.__enter__()
    client = TestClient(create_app(engine, CeleryDispatcher()), raise_server_exceptions=False)
    try:
        yield {
            "client": client,
            "token": token,
            "sim": sim,
            "worker": worker,
            "log": tmp_path / "worker.log",
        }
    finally:
        worker.send_signal(signal.SIGQUIT)  # Celery's cold shutdown: do not finish the run
        try:
            worker.wait(20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(5)
        sim_cm.__exit__(None, None, None)
        get_settings.cache_clear()


def h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def register(d: dict[str, Any]) -> tuple[int, int]:
    c, t = d["client"], d["token"]
    r = c.post("/v1/systems", headers=h(t), json={"name": "sim"})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    r = c.post(
        "/v1/endpoints",
        headers=h(t),
        json={"system_id": sid, "base_url": d["sim"].url, "served_model": "sim-model"},
    )
    assert r.status_code == 201, r.text
    return sid, r.json()["id"]


def wait_for(
    d: dict[str, Any], sub_id: int, states: set[str], timeout_s: float = 120
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = d["client"].get(f"/v1/submissions/{sub_id}", headers=h(d["token"])).json()
        if body["state"] in states:
            return dict(body)
        assert d["worker"].poll() is None, d["log"].read_text()[-3000:]
        time.sleep(0.3)
    raise AssertionError(
        f"submission {sub_id} stuck in {body['state']}: {body['runs']}\n"
        + d["log"].read_text()[-3000:]
    )


def test_submit_measure_and_fetch_results(daemon: dict[str, Any]) -> None:
    c, t = daemon["client"], daemon["token"]
    sid, eid = register(daemon)
    body = {
        "system_id": sid,
        "endpoint_id": eid,
        "workload": "synthetic-chat",
        "levels": [1, 2, 4],
        "requests": 20,
        "warmup": 2,
    }
    r = c.post("/v1/submissions", headers={**h(t), "Idempotency-Key": "k-1"}, json=body)
    assert r.status_code == 201, r.text
    sub = r.json()
    assert [run["level"] for run in sub["runs"]] == [1, 2, 4]
    again = c.post("/v1/submissions", headers={**h(t), "Idempotency-Key": "k-1"}, json=body)
    assert again.status_code == 200 and again.json()["id"] == sub["id"]
    done = wait_for(daemon, sub["id"], {"in_review", "failed"})
    assert done["state"] == "in_review", done
    for run in done["runs"]:
        assert run["state"] == "finished" and run["attempts"] == 1
        row = run["summary"]["row"]
        assert row["issued"] == 20 and row["succeeded"] == 20
        assert 5 <= row["ttft_p50_ms"] <= 9  # the simulator's 5 ms
        summary = c.get(f"/v1/runs/{run['id']}/result_summary.json", headers=h(t))
        assert summary.status_code == 200 and summary.json()["n_samples_issued"] == 20
        records = c.get(f"/v1/runs/{run['id']}/records.npz", headers=h(t))
        assert records.status_code == 200
        assert hashlib.sha256(records.content).hexdigest() == run["artifact_sha256"]
    listed = c.get("/v1/submissions?state=in_review", headers=h(t)).json()
    assert listed["total"] == 1


def test_cancel_stops_a_running_submission(daemon: dict[str, Any]) -> None:
    c, t = daemon["client"], daemon["token"]
    sid, eid = register(daemon)
    r = c.post(
        "/v1/submissions",
        headers=h(t),
        json={
            "system_id": sid,
            "endpoint_id": eid,
            "workload": "synthetic-chat",
            "levels": [2, 4],
            "requests": 100000,
            "min_duration_s": 60,
        },
    )
    sub_id = r.json()["id"]
    wait_for(daemon, sub_id, {"running"})
    t0 = time.monotonic()
    r = c.post(f"/v1/submissions/{sub_id}/cancel", headers=h(t))
    assert r.status_code == 200, r.text
    done = wait_for(daemon, sub_id, {"cancelled"}, timeout_s=30)
    assert time.monotonic() - t0 < 20
    assert [run["state"] for run in done["runs"]] == ["cancelled", "cancelled"]
    r = c.post(f"/v1/submissions/{sub_id}/cancel", headers=h(t))
    assert r.status_code == 409


def test_start_window(daemon: dict[str, Any]) -> None:
    from datetime import UTC, datetime, timedelta

    c, t = daemon["client"], daemon["token"]
    sid, eid = register(daemon)
    now = datetime.now(UTC)
    base = {
        "system_id": sid,
        "endpoint_id": eid,
        "workload": "synthetic-chat",
        "levels": [1],
        "requests": 5,
    }
    later = c.post(
        "/v1/submissions",
        headers=h(t),
        json={**base, "not_before": (now + timedelta(hours=1)).isoformat()},
    ).json()
    missed = c.post(
        "/v1/submissions",
        headers=h(t),
        json={**base, "not_after": (now - timedelta(minutes=1)).isoformat()},
    ).json()
    gone = wait_for(daemon, missed["id"], {"failed"})
    assert gone["runs"][0]["attempts"] == 0, str(gone["runs"])
    time.sleep(2)  # the worker has seen the nudge for `later` and left it alone
    body = c.get(f"/v1/submissions/{later['id']}", headers=h(t)).json()
    assert body["state"] == "queued" and body["runs"][0]["state"] == "planned"
    r = c.post(
        "/v1/submissions",
        headers=h(t),
        json={
            **base,
            "not_before": now.isoformat(),
            "not_after": (now - timedelta(hours=1)).isoformat(),
        },
    )
    assert r.status_code == 422 and r.json()["error"]["fields"][0]["field"] == "not_after"
