"""The whole API fuzzed from its own OpenAPI: never a 5xx, every 4xx in the error shape.

Schemathesis generates valid and invalid requests for every operation (positive and negative
modes, plus its boundary-value coverage phase) and sends them to the app in-process, as an
operator on a migrated SQLite store seeded with one of everything. Random ids rarely name a
row, so two hooks offer, beside each generated id or create body, a copy pinned to the seeded
objects: reads find something, and creates get past their lookups into the store. Whatever
succeeds must also match the documented response schema. Bounded and derandomized: the same
~2,400 requests on every run, in about 20 s.

No request leaves the machine. Endpoint registration would resolve the generated base_url's
host (DNS) and then GET {base_url}/models: a fuzzer steering those would send traffic to any
address it invents, public or on the local network. Both edges are replaced for this module:
the resolver in `orchestrator.endpoints.urls` answers only `localhost` (so the URL rules —
scheme, credentials, metadata and link-local addresses — still run for real on IP literals),
and `orchestrator.endpoints.service.probe` accepts a loopback address without any I/O and
refuses everything else with the same `Invalid` a dead endpoint gets.
"""

from __future__ import annotations

import ipaddress
import json
import math
import socket
import types
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import response_schema_conformance
from sqlalchemy import create_engine
from sqlmodel import Session

from api.app import create_app
from orchestrator import migrate
from orchestrator.auth.models import Role
from orchestrator.auth.service import create_token
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope
from orchestrator.dispatch import NullDispatcher
from orchestrator.endpoints import service as endpoint_service
from orchestrator.endpoints import urls
from orchestrator.errors import Invalid
from orchestrator.runs.models import Run, RunState
from orchestrator.simulator import SimulatorConfig, start_in_thread
from orchestrator.workloads.service import sync_workloads

MAX_EXAMPLES = 100  # per operation, in the fuzzing phase; ~2,400 requests in all
LOOPBACK_URL = "http://127.0.0.1:9/v1"  # never contacted: the probe below does no I/O

calls: dict[str, int] = {}  # "METHOD /path" -> requests sent, for the summary line (-s)


def offline_getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
    """getaddrinfo that resolves `localhost` only, from memory: no DNS query leaves.

    Encodes the name first, as the real one does, so a name IDNA refuses fails the same way.
    """
    str(host).encode("idna")
    if str(host).lower().rstrip(".") == "localhost":
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", port))]
    raise socket.gaierror(socket.EAI_NONAME, "not resolved while fuzzing")


def offline_probe(
    url: str, *, api_key: str | None, headers: dict[str, str], served_model: str, verify_tls: bool
) -> None:
    """The probe's contract (return, or raise Invalid on base_url) without sending a byte."""
    host = (urlsplit(url).hostname or "").strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise Invalid(f"the endpoint did not answer GET {url}/models", field="base_url")


def go_offline(mp: pytest.MonkeyPatch) -> None:
    """Replace the two places where registering an endpoint touches the network."""
    offline_socket = types.SimpleNamespace(
        getaddrinfo=offline_getaddrinfo, gaierror=socket.gaierror, IPPROTO_TCP=socket.IPPROTO_TCP
    )
    mp.setattr(urls, "socket", offline_socket)
    mp.setattr(endpoint_service, "probe", offline_probe)


def seed(app: FastAPI, token: str, data_dir: Path) -> None:
    """A system, two endpoints, a submission and a finished run: targets for small ids."""
    h = {"Authorization": f"Bearer {token}"}
    with TestClient(app, raise_server_exceptions=True) as c:
        r = c.post("/v1/systems", headers=h, json={"name": "fuzz-target"})
        assert r.status_code == 201, r.text
        system_id = r.json()["id"]
        r = c.post(
            "/v1/endpoints",
            headers=h,
            json={"system_id": system_id, "base_url": LOOPBACK_URL, "served_model": "m"},
        )
        assert r.status_code == 201, r.text
        endpoint_id = r.json()["id"]
        r = c.post(
            "/v1/endpoints",
            headers=h,
            json={"system_id": system_id, "base_url": LOOPBACK_URL, "served_model": "m2"},
        )
        assert r.status_code == 201 and r.json()["id"] == SUBMITTABLE_ENDPOINT_ID, r.text
        r = c.post(
            "/v1/submissions",
            headers=h,
            json={
                "system_id": system_id,
                "endpoint_id": endpoint_id,
                "workload": "chat-smoke",
                "levels": [1, 2],
            },
        )
        assert r.status_code == 201, r.text
        run_id = r.json()["runs"][0]["id"]
    summary = data_dir / "result_summary.json"
    summary.write_text('{"n_samples_issued": 1}')
    records = data_dir / "records.npz"
    records.write_bytes(b"records")
    with Session(app.state.engine) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.state = RunState.FINISHED
        run.summary = {"result_summary_path": str(summary)}
        run.artifact_path = str(records)
        session.add(run)
        session.commit()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FastAPI, str]]:
    data_dir = tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROLLBENCH_DATA_DIR", str(data_dir))
        go_offline(mp)
        get_settings.cache_clear()
        url = f"sqlite:///{data_dir / 'rollbench.db'}"
        migrate.upgrade(url)
        engine = make_engine(url)
        with session_scope(engine) as session:
            sync_workloads(session)
            _, token = create_token(session, organisation="mlc", role=Role.OPERATOR)
        app = create_app(engine, NullDispatcher())
        seed(app, token, data_dir)
        try:
            yield app, token
        finally:
            engine.dispose()
            get_settings.cache_clear()
    total = sum(calls.values())
    print(f"\nschemathesis: {total} requests over {len(calls)} (method, path) pairs")


# The operations come from an app that only serves its OpenAPI (its store is never opened);
# every request goes to the `fuzzed` app. schemathesis.pytest.from_fixture would avoid the
# second app, but it sets `Function._nodeid`, which pytest 9 no longer has.
schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(create_engine("sqlite://"), NullDispatcher())
)


SEEDED_IDS = 1  # what `seed` made: every id in the store starts at 1
# The second endpoint of system 1, out of reach of the pinned path ids (which may pause or
# retire endpoint 1): new submissions are made against it.
SUBMITTABLE_ENDPOINT_ID = 2


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any] | None) -> Any:
    # Random ids almost never name a row; half the time, ask for the seeded one instead.
    if not path_parameters:
        return st.just(path_parameters)
    seeded = {k: SEEDED_IDS if is_id(v) else v for k, v in path_parameters.items()}
    return st.sampled_from([path_parameters, seeded])


@schema.hook
def flatmap_body(context: Any, body: Any) -> Any:
    # A random system_id, endpoint_id, workload or base_url stops a create at its first
    # lookup; a pinned copy (offered alongside the random one) goes all the way to the store.
    path = context.operation.path if context.operation else ""
    if context.operation is None or context.operation.method.upper() != "POST":
        return st.just(body)
    if not isinstance(body, dict) or path not in ("/v1/endpoints", "/v1/submissions"):
        return st.just(body)
    pinned = dict(body)
    if is_id(pinned.get("system_id")):
        pinned["system_id"] = SEEDED_IDS
    if is_id(pinned.get("endpoint_id")):
        pinned["endpoint_id"] = SUBMITTABLE_ENDPOINT_ID
    if isinstance(pinned.get("workload"), str):
        pinned["workload"] = "chat-smoke"
        pinned.pop("workload_version", None)
        pinned["pattern"] = "poisson"  # rates may be fractional, concurrencies may not
    if isinstance(pinned.get("base_url"), str):
        pinned["base_url"] = LOOPBACK_URL
    return st.sampled_from([body, pinned])


def is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_error_and_every_4xx_has_the_error_shape(
    case: Any, fuzzed: tuple[FastAPI, str]
) -> None:
    app, operator_token = fuzzed
    # The token replaces whatever Authorization header was generated: a fuzzed header only
    # ever reaches the 401 path, and the fuzzer is here for what lies behind it.
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    case.headers = {**headers, "Authorization": f"Bearer {operator_token}"}
    response = case.call(app=app)
    label = f"{case.method} {case.path}"
    calls[label] = calls.get(label, 0) + 1
    assert response.status_code < 500, f"{label}: {response.status_code} {response.text[:500]}"
    if response.status_code < 300:  # what succeeds has the documented shape
        case.validate_response(response, checks=[response_schema_conformance])
    if 400 <= response.status_code < 500:
        body = response.json()
        assert set(body) == {"error"}, body
        err = body["error"]
        assert set(err) == {"code", "message", "fields"}, err
        assert isinstance(err["code"], str) and isinstance(err["message"], str), err
        assert all(set(f) == {"field", "message"} for f in err["fields"]), err


# Inputs that once answered 500 on one store or both, and that generated JSON rarely or
# never contains (NaN is not JSON, yet Python's parser accepts it). Sent on both stores.
BIG = 2**31  # past PostgreSQL's INTEGER; 2**63 is past SQLite's
LOCAL = {"system_id": 1, "base_url": "http://127.0.0.1:1/v1", "served_model": "m"}
SUBMIT = {"system_id": 1, "endpoint_id": 1, "workload": "chat-smoke", "levels": [1]}
EDGE_CASES: list[tuple[str, str, Any, str]] = [
    # (method, path, JSON body or None, the field the 422 must name)
    ("GET", f"/v1/systems/{BIG}", None, "path.system_id"),
    ("GET", f"/v1/endpoints/{2**63}", None, "path.endpoint_id"),
    ("GET", f"/v1/submissions/{10**30}", None, "path.submission_id"),
    ("GET", f"/v1/runs/{BIG}/records.npz", None, "path.run_id"),
    ("POST", f"/v1/submissions/{BIG}/cancel", None, "path.submission_id"),
    ("PATCH", f"/v1/endpoints/{BIG}", {}, "path.endpoint_id"),
    ("GET", f"/v1/endpoints?system_id={2**63}", None, "query.system_id"),
    ("GET", f"/v1/submissions?endpoint_id={BIG}", None, "query.endpoint_id"),
    ("POST", "/v1/systems", {"name": "a", "description": "nul\x00"}, "body.description"),
    ("POST", "/v1/systems", {"name": "a", "topology": {"tp\x00": 1}}, "body.topology"),
    ("POST", "/v1/systems", {"name": "a", "topology": {"tp": "\ud800"}}, "body.topology"),
    ("POST", "/v1/systems", {"name": "a", "topology": {"tp": math.nan}}, "body.topology"),
    ("POST", "/v1/systems", {"name": "a", "topology": {"tp": [math.inf]}}, "body.topology"),
    ("POST", "/v1/endpoints", {**LOCAL, "system_id": BIG}, "body.system_id"),
    ("POST", "/v1/endpoints", {**LOCAL, "base_url": "http://127.0.0.1:1/v\x00"}, "body.base_url"),
    ("POST", "/v1/endpoints", {**LOCAL, "base_url": "http://127.0.0.1:1/v\x07"}, "base_url"),
    ("POST", "/v1/endpoints", {**LOCAL, "base_url": "http://127.0.0.1:1/v 1"}, "base_url"),
    ("POST", "/v1/endpoints", {**LOCAL, "base_url": f"http://{'a' * 64}.invalid"}, "base_url"),
    ("POST", "/v1/endpoints", {**LOCAL, "served_model": "m\x00"}, "body.served_model"),
    ("POST", "/v1/endpoints", {**LOCAL, "headers": {"X-Team": "caf\u00e9"}}, "headers"),
    ("POST", "/v1/endpoints", {**LOCAL, "headers": {"X-Team": "a\r\nHost: x"}}, "headers"),
    ("PATCH", "/v1/endpoints/1", {"region": "\x00"}, "body.region"),
    ("POST", "/v1/submissions", {**SUBMIT, "levels": [math.nan]}, "body.levels.0"),
    ("POST", "/v1/submissions", {**SUBMIT, "workload": "c\x00"}, "body.workload"),
    ("POST", "/v1/submissions", {**SUBMIT, "server_config": {"k": "\x00"}}, "body.server_config"),
    ("POST", "/v1/submissions", {**SUBMIT, "workload_version": BIG}, "body.workload_version"),
]


def test_edge_inputs_are_a_422_naming_the_field(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    client, tokens = api
    go_offline(monkeypatch)
    h = {"Authorization": f"Bearer {tokens.operator}", "Content-Type": "application/json"}
    with Session(client.app.state.engine) as session:
        sync_workloads(session)
        session.commit()
    r = client.post("/v1/systems", headers=h, json={"name": "edge"})
    assert r.status_code == 201, r.text
    r = client.post(
        "/v1/endpoints",
        headers=h,
        json={"system_id": r.json()["id"], "base_url": LOOPBACK_URL, "served_model": "m"},
    )
    assert r.status_code == 201 and r.json()["id"] == 1, r.text
    wrong = []
    for method, path, body, field in EDGE_CASES:
        raw = json.dumps(body).encode() if body is not None else None  # NaN as NaN
        r = client.request(method, path, headers=h, content=raw)
        fields = [f["field"] for f in r.json()["error"]["fields"]] if r.status_code == 422 else []
        if r.status_code != 422 or field not in fields:
            wrong.append(f"{method} {path} {body}: {r.status_code} {r.text[:200]}")
    assert not wrong, "\n".join(wrong)


def test_timestamps_are_utc_with_an_offset_on_every_store(api: Any) -> None:
    # SQLite keeps no zone: an input at +02:00 used to come back two hours late and bare.
    client, tokens = api
    h = {"Authorization": f"Bearer {tokens.operator}"}
    with Session(client.app.state.engine) as session:
        sync_workloads(session)
        session.commit()
    with start_in_thread(SimulatorConfig(ttft_ms=1, tpot_ms=1)) as sim:
        sid = client.post("/v1/systems", headers=h, json={"name": "tz"}).json()["id"]
        r = client.post(
            "/v1/endpoints",
            headers=h,
            json={"system_id": sid, "base_url": sim.url, "served_model": "sim-model"},
        )
        assert r.status_code == 201, r.text
    body = {
        "system_id": sid,
        "endpoint_id": r.json()["id"],
        "workload": "chat-smoke",
        "levels": [1],
        "not_before": "2030-01-01T02:00:00+02:00",
    }
    r = client.post("/v1/submissions", headers=h, json=body)
    assert r.status_code == 201, r.text
    sub = client.get(f"/v1/submissions/{r.json()['id']}", headers=h).json()
    assert datetime.fromisoformat(sub["not_before"]) == datetime(2030, 1, 1, tzinfo=UTC)
    for moment in (sub["not_before"], sub["created_at"], sub["updated_at"]):
        assert datetime.fromisoformat(moment).utcoffset() == timedelta(0), moment
