"""Systems and endpoints over REST: validation, credentials, organisations and roles."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from orchestrator.simulator import Simulator, SimulatorConfig, start_in_thread


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with start_in_thread(SimulatorConfig(ttft_ms=1, tpot_ms=1, api_key="k3y")) as s:
        yield s


def error(resp: Any) -> dict[str, Any]:
    body = resp.json()
    assert set(body) == {"error"} and {"code", "message", "fields"} <= set(body["error"])
    return dict(body["error"])


def make_system(client: TestClient, token: str, name: str = "h100-vllm") -> int:
    r = client.post(
        "/v1/systems",
        headers=auth(token),
        json={"name": name, "accelerator_model": "H100", "accelerator_count": 8},
    )
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def test_health_and_auth_required(api: Any) -> None:
    client, _ = api
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ok"}
    r = client.get("/v1/systems")
    assert r.status_code == 401 and error(r)["code"] == "unauthorized"
    r = client.get("/v1/systems", headers=auth("rb_not-a-real-token"))
    assert r.status_code == 401


def test_system_validation_names_the_field(api: Any) -> None:
    client, t = api
    make_system(client, t.alice)
    r = client.post("/v1/systems", headers=auth(t.alice), json={"name": "h100-vllm"})
    assert r.status_code == 409 and error(r)["fields"][0]["field"] == "name"
    r = client.post("/v1/systems", headers=auth(t.alice), json={"name": "", "nodes": 0})
    assert r.status_code == 422
    fields = {f["field"] for f in error(r)["fields"]}
    assert {"body.name", "body.nodes"} <= fields
    r = client.post("/v1/systems", headers=auth(t.alice), json={"name": "x", "gpus": 8})
    assert r.status_code == 422 and error(r)["fields"][0]["field"] == "body.gpus"
    r = client.post(
        "/v1/systems",
        headers={**auth(t.alice), "Content-Type": "application/json"},
        content=b"{not json",
    )
    assert r.status_code == 422
    r = client.post("/v1/systems", headers=auth(t.alice), content=b"x" * (2 * 1024 * 1024))
    assert r.status_code == 413 and error(r)["code"] == "too_large"
    r = client.get("/v1/systems?limit=0", headers=auth(t.alice))
    assert r.status_code == 422 and error(r)["fields"][0]["field"] == "query.limit"
    assert client.get("/v1/systems/999999", headers=auth(t.alice)).status_code == 404


def test_organisations_and_roles(api: Any) -> None:
    client, t = api
    sid = make_system(client, t.alice)
    # another submitter neither sees nor reaches it
    assert client.get(f"/v1/systems/{sid}", headers=auth(t.bob)).status_code == 404
    assert client.get("/v1/systems", headers=auth(t.bob)).json()["total"] == 0
    # operators and viewers read everything; viewers write nothing
    assert client.get(f"/v1/systems/{sid}", headers=auth(t.operator)).status_code == 200
    assert client.get(f"/v1/systems/{sid}", headers=auth(t.viewer)).status_code == 200
    r = client.post("/v1/systems", headers=auth(t.viewer), json={"name": "mine"})
    assert r.status_code == 403
    # an operator may act for an organisation; a submitter may not
    r = client.post(
        "/v1/systems", headers=auth(t.operator), json={"name": "b200", "organisation": "globex"}
    )
    assert r.status_code == 201, r.text
    assert client.get("/v1/systems", headers=auth(t.bob)).json()["total"] == 1
    r = client.post(
        "/v1/systems", headers=auth(t.alice), json={"name": "sneaky", "organisation": "globex"}
    )
    assert r.status_code == 403 and error(r)["fields"][0]["field"] == "organisation"


def test_endpoint_registration_keeps_credentials_secret(
    api: Any, sim: Simulator, db_url: str
) -> None:
    client, t = api
    sid = make_system(client, t.alice)
    body = {
        "system_id": sid,
        "base_url": sim.url,
        "served_model": "sim-model",
        "api_key": "k3y",
        "headers": {"X-Team": "perf"},
    }
    r = client.post("/v1/endpoints", headers=auth(t.alice), json=body)
    assert r.status_code == 201, r.text
    ep = r.json()
    assert ep["has_api_key"] is True and ep["header_names"] == ["X-Team"]
    assert "k3y" not in r.text and "api_key" not in ep
    listed = client.get(f"/v1/endpoints?system_id={sid}", headers=auth(t.alice)).json()
    assert listed["total"] == 1 and "k3y" not in str(listed)
    # the store holds the key sealed, never in clear
    from orchestrator.db import make_engine

    engine = make_engine(db_url)
    with engine.connect() as conn:
        blob = conn.execute(text("SELECT secrets_sealed FROM endpoint")).scalar_one()
    engine.dispose()
    assert b"k3y" not in bytes(blob)
    # others cannot see it; its owner can pause it
    assert client.get(f"/v1/endpoints/{ep['id']}", headers=auth(t.bob)).status_code == 404
    r = client.patch(f"/v1/endpoints/{ep['id']}", headers=auth(t.alice), json={"state": "paused"})
    assert r.status_code == 200 and r.json()["state"] == "paused"
    r = client.patch(f"/v1/endpoints/{ep['id']}", headers=auth(t.viewer), json={"state": "active"})
    assert r.status_code == 403


@pytest.mark.parametrize(
    ("change", "field", "needle"),
    [
        ({"base_url": "ftp://example.org/v1"}, "base_url", "http"),
        ({"base_url": "http://169.254.169.254/latest"}, "base_url", "metadata"),
        ({"base_url": "http://[fd00:ec2::254]/v1"}, "base_url", "metadata"),
        ({"base_url": "http://metadata.google.internal/v1"}, "base_url", "metadata"),
        ({"base_url": "http://user:pw@127.0.0.1:1/v1"}, "base_url", "credentials"),
        ({"base_url": "http://127.0.0.1:1/v1"}, "base_url", "did not answer"),
        ({"base_url": "http://no-such-host.invalid/v1"}, "base_url", "resolve"),
        ({"served_model": "gpt-9"}, "served_model", "sim-model"),
        ({"api_key": "wrong"}, "api_key", "refused"),
        ({"headers": {"Bad:Name": "x"}}, "headers", "not allowed"),
        ({"system_id": 999999}, None, "no system"),
    ],
)
def test_endpoint_bad_input(
    api: Any, sim: Simulator, change: dict[str, Any], field: str | None, needle: str
) -> None:
    client, t = api
    sid = make_system(client, t.alice, name=f"s{abs(hash(str(change))) % 10**6}")
    body = {
        "system_id": sid,
        "base_url": sim.url,
        "served_model": "sim-model",
        "api_key": "k3y",
        **change,
    }
    r = client.post("/v1/endpoints", headers=auth(t.alice), json=body)
    assert 400 <= r.status_code < 500, r.text
    err = error(r)
    assert needle in err["message"]
    if field is not None:
        assert err["fields"][0]["field"] == field
