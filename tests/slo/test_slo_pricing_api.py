"""Pricing over REST: a system's hourly price and C_max, an endpoint's token prices.

Negative prices and bad currencies are 422 naming the field; a system's PATCH is the
owner's (or an operator's); every change is audited; a priced endpoint prices its points.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from slo.slo_world import add_point, make_system
from sqlmodel import Session, select

from orchestrator.audit.models import AuditEntry
from orchestrator.endpoints.models import Endpoint
from orchestrator.simulator import Simulator, SimulatorConfig, start_in_thread


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def fields(resp: Any) -> set[str]:
    return {f["field"] for f in resp.json()["error"]["fields"]}


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with start_in_thread(SimulatorConfig(ttft_ms=1, tpot_ms=1)) as s:
        yield s


def test_system_create_carries_pricing_and_c_max(api: Any) -> None:
    client, t = api
    r = client.post(
        "/v1/systems",
        headers=auth(t.alice),
        json={"name": "s", "price_per_hour": 12.5, "currency": "EUR", "max_concurrency": 256},
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["price_per_hour"], body["currency"], body["max_concurrency"]) == (12.5, "EUR", 256)
    r = client.post("/v1/systems", headers=auth(t.alice), json={"name": "plain"})
    assert (r.json()["price_per_hour"], r.json()["currency"]) == (None, "USD")


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ({"price_per_hour": -1}, "body.price_per_hour"),
        ({"currency": "usd"}, "body.currency"),
        ({"currency": "DOLLARS"}, "body.currency"),
        ({"max_concurrency": 0}, "body.max_concurrency"),
    ],
)
def test_bad_system_pricing_is_422_naming_the_field(
    api: Any, extra: dict[str, Any], where: str
) -> None:
    client, t = api
    r = client.post("/v1/systems", headers=auth(t.alice), json={"name": "s", **extra})
    assert r.status_code == 422 and fields(r) == {where}, r.text
    sid = client.post("/v1/systems", headers=auth(t.alice), json={"name": "ok"}).json()["id"]
    r = client.patch(f"/v1/systems/{sid}", headers=auth(t.alice), json=extra)
    assert r.status_code == 422 and fields(r) == {where}, r.text


def test_system_patch_by_owner_and_operator_only(api: Any) -> None:
    client, t = api
    sid = client.post("/v1/systems", headers=auth(t.alice), json={"name": "s"}).json()["id"]
    r = client.patch(
        f"/v1/systems/{sid}",
        headers=auth(t.alice),
        json={"price_per_hour": 3.0, "currency": "GBP", "max_concurrency": 64, "runtime": "vllm"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["price_per_hour"] == 3.0 and r.json()["runtime"] == "vllm"
    assert r.json()["name"] == "s" and r.json()["accelerator_count"] == 0  # untouched
    assert client.patch(f"/v1/systems/{sid}", headers=auth(t.bob), json={}).status_code == 404
    r = client.patch(f"/v1/systems/{sid}", headers=auth(t.viewer), json={"price_per_hour": 0})
    assert r.status_code == 403
    r = client.patch(f"/v1/systems/{sid}", headers=auth(t.operator), json={"price_per_hour": None})
    assert r.status_code == 200 and r.json()["price_per_hour"] is None
    assert r.json()["currency"] == "GBP" and r.json()["max_concurrency"] == 64
    for bad in ({"name": "renamed"}, {"runtime": None}, {"currency": None}):
        r = client.patch(f"/v1/systems/{sid}", headers=auth(t.alice), json=bad)
        assert r.status_code == 422 and fields(r) == {f"body.{next(iter(bad))}"}, r.text
    assert client.patch("/v1/systems/999999", headers=auth(t.operator), json={}).status_code == 404
    with Session(client.app.state.engine) as session:
        entries = session.exec(
            select(AuditEntry).where(
                AuditEntry.object_type == "system", AuditEntry.action == "update"
            )
        ).all()
    assert [e.data["fields"] for e in entries] == [
        ["currency", "max_concurrency", "price_per_hour", "runtime"],
        ["price_per_hour"],
    ]
    assert entries[1].data["before"] == {"price_per_hour": 3.0}


def test_endpoint_token_prices(api: Any, sim: Simulator) -> None:
    client, t = api
    sid = client.post("/v1/systems", headers=auth(t.alice), json={"name": "s"}).json()["id"]
    base = {"system_id": sid, "base_url": sim.url, "served_model": "sim-model"}
    r = client.post(
        "/v1/endpoints", headers=auth(t.alice), json={**base, "input_price_per_mtok": -0.5}
    )
    assert r.status_code == 422 and fields(r) == {"body.input_price_per_mtok"}
    r = client.post(
        "/v1/endpoints",
        headers=auth(t.alice),
        json={**base, "input_price_per_mtok": 0.5, "output_price_per_mtok": 1.5, "currency": "EUR"},
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["input_price_per_mtok"], body["output_price_per_mtok"]) == (0.5, 1.5)
    eid = body["id"]
    r = client.patch(
        f"/v1/endpoints/{eid}", headers=auth(t.alice), json={"output_price_per_mtok": -2}
    )
    assert r.status_code == 422 and fields(r) == {"body.output_price_per_mtok"}
    r = client.patch(
        f"/v1/endpoints/{eid}",
        headers=auth(t.alice),
        json={"output_price_per_mtok": 2.0, "input_price_per_mtok": None},
    )
    assert r.status_code == 200, r.text
    assert (r.json()["input_price_per_mtok"], r.json()["output_price_per_mtok"]) == (None, 2.0)
    assert r.json()["currency"] == "EUR"
    r = client.patch(f"/v1/endpoints/{eid}", headers=auth(t.bob), json={"currency": "USD"})
    assert r.status_code == 404


def test_a_token_priced_point_costs_the_same_at_every_fraction(api: Any) -> None:
    client, t = api
    with Session(client.app.state.engine, expire_on_commit=False) as session:
        curve = make_system(session, org="acme", name="tokens")
        endpoint = session.get(Endpoint, curve.endpoint.id)
        assert endpoint is not None
        endpoint.input_price_per_mtok, endpoint.output_price_per_mtok = 1.0, 4.0
        endpoint.currency = "EUR"
        # 1 % failed: 1/(1 − 0.01) attempts per success; 128 in, 64 out tokens per request
        point = add_point(
            session, curve, "c1", concurrency=1, qps=10, ttft_p99_ms=100, tpot_p99_ms=10, failed=1
        )
        session.commit()
    r = client.get(f"/v1/points/{point.id}/cost?slo=batch", headers=auth(t.alice))
    assert r.status_code == 200, r.text
    (band,) = r.json()["bands"]
    expected = (128 * 1.0 + 64 * 4.0) / 1e6 / 0.99
    assert band["basis"] == "tokens" and band["currency"] == "EUR" and band["collapsed"]
    assert band["per_request_low"] == band["per_request_high"] == pytest.approx(expected)
    assert band["per_mtok_output_low"] == pytest.approx(expected / 64 * 1e6)
    assert band["expected_attempts"] == pytest.approx(1 / 0.99)
    # interactive allows 0.1 % errors: the same point is outside it, so it has no cost
    r = client.get(f"/v1/points/{point.id}/cost?slo=interactive", headers=auth(t.alice))
    assert r.json()["bands"] == [] and "error rate 1 % > 0.1 %" in r.json()["reason"]
