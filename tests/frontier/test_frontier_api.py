"""/v1/frontiers over HTTP, on SQLite and PostgreSQL: published to any token, 4xx naming fields."""

from __future__ import annotations

from .conftest import ApiWorld


def _build(api: ApiWorld) -> dict[str, int]:
    w = api.world
    workload_id = w.workload("chat-smoke")
    a = w.system("acme-sys", org="acme")
    b = w.system("globex-sys", org="globex")
    sub_a = w.submission(a, workload_id)
    pa = w.points(sub_a, [(1, 100.0, 10.0), (4, 300.0, 12.0)])
    w.apply(a, workload_id, pa, submission_id=sub_a)
    pa += w.points(sub_a, [(16, 800.0, 25.0)])
    w.apply(a, workload_id, pa[2:], submission_id=sub_a)
    sub_b = w.submission(b, workload_id)
    pb = w.points(sub_b, [(8, 900.0, 9.0)])
    w.apply(b, workload_id, pb, submission_id=sub_b)
    return {"a": a, "b": b, "p16": pa[2], "p1": pa[0]}


def test_any_token_reads_a_published_frontier(api: ApiWorld) -> None:
    ids = _build(api)
    for who in ("alice", "bob", "operator", "viewer"):
        r = api.client.get(f"/v1/frontiers/{ids['a']}/chat-smoke", headers=api.headers(who))
        assert r.status_code == 200, (who, r.text)
    assert api.client.get(f"/v1/frontiers/{ids['a']}/chat-smoke").status_code == 401
    body = r.json()
    assert body["version"] == 2 and body["system"] == "acme-sys"
    assert body["added"] == [ids["p16"]]
    steps = body["steps"]
    assert steps["kind"] == "pareto"
    assert steps["x"]["name"] == "tps_per_user" and steps["y"]["name"] == "tps"
    assert steps["corners"][0]["point_id"] == ids["p16"]
    corners = {(c["x"], c["y"]) for c in steps["corners"]}
    members = {(m["x"], m["y"]) for m in body["members"]}
    assert corners <= members  # every corner is a measured point
    assert all(s["y"] in {c["y"] for c in steps["corners"]} for s in steps["segments"])
    assert all(m["on_frontier"] for m in body["members"])


def test_version_axes_and_history(api: ApiWorld) -> None:
    ids = _build(api)
    h = api.headers("viewer")
    r = api.client.get(f"/v1/frontiers/{ids['a']}/chat-smoke?version=1", headers=h)
    assert r.status_code == 200 and len(r.json()["members"]) == 2
    r = api.client.get(f"/v1/frontiers/{ids['a']}/chat-smoke?x=concurrency&y=tps", headers=h)
    assert r.status_code == 200
    assert r.json()["steps"]["kind"] == "measured"
    assert [c["x"] for c in r.json()["steps"]["corners"]] == [1.0, 4.0, 16.0]
    r = api.client.get(f"/v1/frontiers/{ids['a']}/chat-smoke?x=ttft_p99_ms&y=qps", headers=h)
    assert r.status_code == 200 and r.json()["steps"]["x"]["higher_is_better"] is False
    r = api.client.get(f"/v1/frontiers/{ids['a']}/chat-smoke/versions", headers=h)
    assert r.status_code == 200
    items = r.json()["items"]
    assert [i["version"] for i in items] == [1, 2]
    assert items[1]["added"] == [ids["p16"]] and items[1]["actor"] == "operator"
    assert set(items[0]) >= {"created_at", "superseded", "dominated", "submission_id"}


def test_compare_systems_on_one_workload(api: ApiWorld) -> None:
    ids = _build(api)
    r = api.client.get(
        f"/v1/frontiers/compare?workload=chat-smoke&system_id={ids['a']}&system_id={ids['b']}",
        headers=api.headers("bob"),
    )
    assert r.status_code == 200, r.text
    curves = r.json()["curves"]
    assert [c["system_id"] for c in curves] == [ids["a"], ids["b"]]
    assert [len(c["steps"]["corners"]) for c in curves] == [3, 1]
    assert r.json()["workload_version"] == 1


def test_slo_annotates_admissibility(api: ApiWorld) -> None:
    ids = _build(api)
    r = api.client.get(
        f"/v1/frontiers/{ids['a']}/chat-smoke?slo=interactive", headers=api.headers("viewer")
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["slo"] == "interactive" and "quality" in body["quality_note"]
    for m in body["members"]:
        verdict = m["admissibility"]
        assert verdict is not None and isinstance(verdict["admissible"], bool)
        assert any(reason["limit"] == "quality" for reason in verdict["reasons"])
    r = api.client.get(
        f"/v1/frontiers/{ids['a']}/chat-smoke?slo=no-such-profile", headers=api.headers("viewer")
    )
    assert r.status_code == 404 and r.json()["error"]["fields"][0]["field"] == "slo"


def _field(r: object) -> list[str]:
    return [f["field"] for f in r.json()["error"]["fields"]]  # type: ignore[attr-defined]


def test_bad_input_is_a_4xx_naming_the_field(api: ApiWorld) -> None:
    ids = _build(api)
    h = api.headers("viewer")
    base = f"/v1/frontiers/{ids['a']}/chat-smoke"
    r = api.client.get(base + "?x=speed", headers=h)
    assert r.status_code == 422 and _field(r) == ["query.x"]
    assert "tps_per_user" in r.json()["error"]["message"]
    r = api.client.get(base + "?y=nope", headers=h)
    assert r.status_code == 422 and _field(r) == ["query.y"]
    r = api.client.get(base + "?x=tps&y=tps", headers=h)
    assert r.status_code == 422
    r = api.client.get(base + "?version=7", headers=h)
    assert r.status_code == 404 and _field(r) == ["version"]
    for path in (
        f"/v1/frontiers/{ids['a']}/no-such-workload",
        "/v1/frontiers/2147483647/chat-smoke",
        f"/v1/frontiers/{ids['a']}/no-such-workload/versions",
    ):
        assert api.client.get(path, headers=h).status_code == 404, path
    for path in (
        "/v1/frontiers/2147483648/chat-smoke",
        "/v1/frontiers/0/chat-smoke",
        base + "?version=0",
        f"/v1/frontiers/{ids['a']}/bad%00name",
        base + "?slo=bad%00name",
        "/v1/frontiers/compare?workload=chat-smoke",
        "/v1/frontiers/compare?workload=chat-smoke&system_id=abc",
        "/v1/frontiers/compare?workload=chat-smoke&system_id=99999999999",
        f"/v1/frontiers/compare?workload=chat-smoke&system_id={ids['a']}&x=speed",
    ):
        r = api.client.get(path, headers=h)
        assert r.status_code == 422, (path, r.text)
        assert r.json()["error"]["fields"], path
    r = api.client.get(f"/v1/frontiers/compare?workload=nope&system_id={ids['a']}", headers=h)
    assert r.status_code == 404
    r = api.client.get("/v1/frontiers/compare?workload=chat-smoke&system_id=2147483647", headers=h)
    assert r.status_code == 404


def test_a_system_without_a_frontier_is_404(api: ApiWorld) -> None:
    _build(api)
    lonely = api.world.system("lonely", org="acme")
    r = api.client.get(f"/v1/frontiers/{lonely}/chat-smoke", headers=api.headers("alice"))
    assert r.status_code == 404 and "no frontier" in r.json()["error"]["message"]
    r = api.client.get(f"/v1/frontiers/{lonely}/chat-smoke/versions", headers=api.headers("alice"))
    assert r.status_code == 200 and r.json()["items"] == []


def test_a_token_is_needed_before_anything_else(api: ApiWorld) -> None:
    for path in (
        "/v1/frontiers/compare",
        "/v1/frontiers/compare?workload=chat-smoke&system_id=1",
        "/v1/frontiers/1/chat-smoke",
        "/v1/frontiers/1/chat-smoke/versions",
    ):
        r = api.client.get(path)
        assert r.status_code == 401, (path, r.text)
        assert r.json()["error"]["code"] == "unauthorized"
