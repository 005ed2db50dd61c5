"""SLO profiles, rankings, admissibility and cost over REST, with every role."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from slo.slo_world import Curve, add_point, two_systems
from sqlmodel import Session, select

from orchestrator.audit.models import AuditEntry
from orchestrator.runs.models import PointState


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def error(resp: Any) -> dict[str, Any]:
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "fields"}
    return dict(body["error"])


def fields(resp: Any) -> set[str]:
    return {f["field"] for f in error(resp)["fields"]}


@pytest.fixture
def world(api: Any) -> Iterator[tuple[TestClient, Any, Curve, Curve]]:
    """Two systems (acme/small, globex/large) with accepted points, and one candidate of acme."""
    client, tokens = api
    with Session(client.app.state.engine, expire_on_commit=False) as session:
        small, large = two_systems(session)
        add_point(
            session,
            small,
            "candidate",
            concurrency=2,
            state=PointState.CANDIDATE,
            qps=9,
            ttft_p99_ms=150,
            tpot_p99_ms=12,
        )
        session.commit()
    yield client, tokens, small, large


def test_profiles_are_readable_by_any_token(api: Any) -> None:
    client, t = api
    assert client.get("/v1/slo-profiles").status_code == 401
    for token in (t.alice, t.bob, t.viewer, t.operator):
        r = client.get("/v1/slo-profiles", headers=auth(token))
        assert r.status_code == 200, r.text
        assert [p["name"] for p in r.json()["items"]] == ["batch", "interactive", "realtime"]
    r = client.get("/v1/slo-profiles/interactive", headers=auth(t.viewer))
    assert r.status_code == 200
    body = r.json()
    assert body["limits"]["ttft_ms"] == {"percentile": 99.0, "max": 1000.0}
    assert body["limits"]["latency_ms"] is None and body["source"].endswith("interactive.yaml")
    r = client.get("/v1/slo-profiles/nope", headers=auth(t.alice))
    assert r.status_code == 404 and fields(r) == {"slo"}
    r = client.get("/v1/slo-profiles/NOPE", headers=auth(t.alice))
    assert r.status_code == 422 and fields(r) == {"path.name"}


def test_operators_alone_create_and_replace_profiles(api: Any) -> None:
    client, t = api
    body = {
        "name": "tight",
        "description": "t",
        "limits": {"ttft_ms": {"percentile": 90, "max": 200}},
    }
    for token in (t.alice, t.viewer):
        r = client.post("/v1/slo-profiles", headers=auth(token), json=body)
        assert r.status_code == 403 and error(r)["code"] == "forbidden"
    r = client.post("/v1/slo-profiles", headers=auth(t.operator), json=body)
    assert r.status_code == 201, r.text
    assert r.json()["source"] == "api" and r.json()["created_by"].startswith("token:")
    r = client.post("/v1/slo-profiles", headers=auth(t.operator), json=body)
    assert r.status_code == 409 and fields(r) == {"name"}
    r = client.post("/v1/slo-profiles", headers=auth(t.operator), json={**body, "name": "batch"})
    assert r.status_code == 409  # a file's profile exists from the first read on

    new = {"description": "tighter", "limits": {"ttft_ms": {"percentile": 99, "max": 150}}}
    assert client.put("/v1/slo-profiles/tight", headers=auth(t.alice), json=new).status_code == 403
    r = client.put("/v1/slo-profiles/tight", headers=auth(t.operator), json=new)
    assert r.status_code == 200 and r.json()["limits"]["ttft_ms"]["max"] == 150
    assert (
        client.put("/v1/slo-profiles/gone", headers=auth(t.operator), json=new).status_code == 404
    )
    # replacing a file's profile makes it the operator's: the file no longer overwrites it
    r = client.put("/v1/slo-profiles/batch", headers=auth(t.operator), json=new)
    assert r.status_code == 200 and r.json()["source"] == "api"
    again = client.get("/v1/slo-profiles/batch", headers=auth(t.viewer)).json()
    assert again["limits"]["ttft_ms"]["max"] == 150 and again["description"] == "tighter"
    with Session(client.app.state.engine) as session:
        actions = session.exec(
            select(AuditEntry.action).where(
                AuditEntry.object_type == "slo_profile", AuditEntry.actor.startswith("token:")
            )
        ).all()
    assert sorted(actions) == ["create", "update", "update"]


@pytest.mark.parametrize(
    ("limits", "where"),
    [
        ({}, "body.limits"),
        ({"ttft_ms": {"percentile": 99, "max": -1}}, "body.limits.ttft_ms.max"),
        ({"ttft_ms": {"percentile": 42, "max": 1}}, "body.limits.ttft_ms.percentile"),
        ({"error_rate": 2}, "body.limits.error_rate"),
    ],
)
def test_bad_profiles_are_422_naming_the_field(api: Any, limits: Any, where: str) -> None:
    client, t = api
    r = client.post(
        "/v1/slo-profiles", headers=auth(t.operator), json={"name": "bad", "limits": limits}
    )
    assert r.status_code == 422 and where in fields(r), r.text
    r = client.put("/v1/slo-profiles/batch", headers=auth(t.operator), json={"limits": limits})
    assert r.status_code == 422 and where in fields(r), r.text


def test_rankings_change_with_the_slo(world: Any) -> None:
    client, t, small, _ = world
    r = client.get("/v1/rankings?workload=synthetic-chat&slo=interactive", headers=auth(t.bob))
    assert r.status_code == 200, r.text
    body = r.json()
    assert [row["system"] for row in body["rows"]] == ["acme/small", "globex/large"]
    assert body["quality_note"] == "quality: not measured (workload has no accuracy suite)"
    top = body["rows"][0]
    assert top["best_qps_point_id"] == small.points["c8"].id
    assert top["cost"]["bands"][0]["currency"] == "USD"
    r = client.get("/v1/rankings?workload=synthetic-chat&slo=batch", headers=auth(t.viewer))
    assert [row["system"] for row in r.json()["rows"]] == ["globex/large", "acme/small"]
    r = client.get("/v1/rankings?workload=synthetic-chat&slo=realtime", headers=auth(t.alice))
    last = r.json()["rows"][-1]
    assert last["admissible_points"] == 0 and "every point exceeds TTFT p90" in last["reason"]
    # no slo: the programme's default
    r = client.get("/v1/rankings?workload=synthetic-chat", headers=auth(t.alice))
    assert r.json()["slo"] == "interactive"


def test_ranking_bad_input(world: Any) -> None:
    client, t, _, _ = world
    r = client.get("/v1/rankings", headers=auth(t.alice))
    assert r.status_code == 422 and fields(r) == {"query.workload"}
    r = client.get("/v1/rankings?workload=synthetic-chat&slo=nope", headers=auth(t.alice))
    assert r.status_code == 404 and fields(r) == {"slo"}
    r = client.get("/v1/rankings?workload=nope&slo=batch", headers=auth(t.alice))
    assert r.status_code == 404 and fields(r) == {"workload"}
    r = client.get("/v1/rankings?workload=synthetic-chat&slo=Bad%20Name", headers=auth(t.alice))
    assert r.status_code == 422 and fields(r) == {"query.slo"}
    assert client.get("/v1/rankings?workload=synthetic-chat").status_code == 401


def test_admissibility_of_a_published_point_for_any_token(world: Any) -> None:
    client, t, _, large = world
    pid = large.points["c64"].id
    for token in (t.alice, t.bob, t.viewer, t.operator):
        r = client.get(f"/v1/points/{pid}/admissibility?slo=interactive", headers=auth(token))
        assert r.status_code == 200, r.text
    body = r.json()
    assert body["admissible"] is False and body["slo"] == "interactive"
    ttft = body["reasons"][0]
    assert ttft == {
        "limit": "ttft_ms",
        "passed": False,
        "measured": pytest.approx(5000),
        "threshold": 1000,
        "message": "TTFT p99 5000 ms > 1000 ms",
    }
    assert body["quality"] == "not measured" and body["reasons"][-1]["limit"] == "quality"
    r = client.get(f"/v1/points/{pid}/admissibility?slo=batch", headers=auth(t.alice))
    assert r.json()["admissible"] is True


def test_a_candidate_point_is_read_only_by_its_organisation_and_readers(world: Any) -> None:
    client, t, small, _ = world
    pid = small.points["candidate"].id
    for path in ("admissibility", "cost"):
        for token in (t.alice, t.viewer, t.operator):
            assert client.get(f"/v1/points/{pid}/{path}", headers=auth(token)).status_code == 200
        foreign = client.get(f"/v1/points/{pid}/{path}", headers=auth(t.bob))
        missing = client.get(f"/v1/points/999999/{path}", headers=auth(t.bob))
        assert foreign.status_code == missing.status_code == 404
        assert error(foreign)["message"].replace(str(pid), "N") == error(missing)[
            "message"
        ].replace("999999", "N")
        # a foreign point with a bad profile name says nothing about the point either
        r = client.get(f"/v1/points/{pid}/{path}?slo=nope", headers=auth(t.bob))
        assert r.status_code == 404 and "point" in error(r)["message"]
        assert client.get(f"/v1/points/{pid}/{path}").status_code == 401
        assert client.get(f"/v1/points/0/{path}", headers=auth(t.alice)).status_code == 422


def test_cost_of_points_in_and_outside_the_slo(world: Any) -> None:
    client, t, small, large = world
    r = client.get(f"/v1/points/{small.points['c8'].id}/cost?slo=interactive", headers=auth(t.bob))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["admissible"] is True and body["reason"] == ""
    (band,) = body["bands"]
    assert band["basis"] == "hourly" and band["delivered_fraction"] == [0.6, 0.9]
    assert band["per_request_high"] == pytest.approx(2 / (3600 * 30 * 0.6))
    assert body["quality_note"].startswith("quality: not measured")
    r = client.get(f"/v1/points/{large.points['c64'].id}/cost?slo=interactive", headers=auth(t.bob))
    body = r.json()
    assert body["admissible"] is False and body["bands"] == []
    assert body["reason"].startswith("no cost: outside the SLO interactive: TTFT p99 5000 ms")
