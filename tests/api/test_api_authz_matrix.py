"""The authorization matrix: every route × every kind of caller × own and foreign objects.

Two organisations, acme and globex, each own one of everything (system, endpoint, submission,
a finished run with its result files), built once through the API by their submitters (alice
and bob). Each route of the table below is then called by each caller on each owner's object,
and the status must be exactly the one the rules give (DESIGN §11):

- no token, or a revoked one: 401 (health routes need no token: 200);
- operators: everything;
- viewers: every read, no write (403);
- submitters: everything on their own organisation's objects; a foreign object is 404, never
  403, so that its existence does not leak; a system created *for* another organisation is
  refused with 403 (the name in the body is the caller's, not a lookup);
- published results (accepted points, frontiers, rankings, SLO profiles): every token reads;
- review decisions and the review queue: operators only (a submitter's own submission 403, a
  foreign one 404).

Every 4xx carries the error shape; a foreign 404 reads exactly like a missing object's (the
same message, ids aside); a list shows an object exactly when its reader may read it; a
refused write leaves no trace. The table is checked against the app's routes, so a new route
without a row fails here until someone decides who may call it.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy import create_engine
from sqlmodel import Session, select

from api.app import create_app
from orchestrator.auth.models import Role
from orchestrator.auth.service import create_token, revoke_token
from orchestrator.dispatch import NullDispatcher
from orchestrator.frontier.service import apply_change
from orchestrator.review.service import enter_review
from orchestrator.runs.models import Point, PointState, Run, RunKind, RunState
from orchestrator.simulator import Simulator, SimulatorConfig, start_in_thread
from orchestrator.submissions.models import Submission, SubmissionState
from orchestrator.workloads.service import sync_workloads

OWNERS = ("acme", "globex")
GHOST = "ghost"  # owner of objects that do not exist: every id is MISSING_ID
MISSING_ID = 999_999
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class Kind(enum.Enum):
    PUBLIC = "public"  # no token needed
    LIST = "list"  # a collection, filtered by who reads it
    READ = "read"  # one object, by id
    CREATE = "create"  # a new object, for the owner named in the body
    WRITE = "write"  # a change to one object, by id
    PUBLISHED = "published"  # a published result (accepted points, frontiers): any token reads
    OPERATE = "operate"  # operators only: a submitter's own object 403, a foreign one 404
    OPERATORS = "operators"  # operators only, no object (the review queue)


@dataclass(frozen=True)
class Caller:
    name: str
    role: Role | None  # None: no token at all
    organisation: str | None
    revoked: bool = False


CALLERS = (
    Caller("alice", Role.SUBMITTER, "acme"),
    Caller("bob", Role.SUBMITTER, "globex"),
    Caller("operator", Role.OPERATOR, "mlc"),
    Caller("viewer", Role.VIEWER, "public"),
    Caller("anonymous", None, None),
    Caller("revoked", Role.SUBMITTER, "acme", revoked=True),
)


@dataclass
class Objects:
    """One organisation's objects (ids as the API returned them)."""

    system_id: int
    endpoint_id: int
    submission_id: int
    run_id: int
    point_id: int = 0
    workload: str = "chat-smoke"  # the workload of its frontier
    name: str = "interactive"  # an SLO profile (they belong to no organisation)


@dataclass
class World:
    client: TestClient
    tokens: dict[str, str]  # caller name -> clear token (no entry: no token)
    sim: Simulator
    objects: dict[str, Objects] = field(default_factory=dict)  # owner -> its objects
    serial: int = 0
    # owner -> the candidate point of the last submission `in_review_submission` made
    fresh_points: dict[str, int] = field(default_factory=dict)

    def headers(self, caller: str) -> dict[str, str]:
        token = self.tokens.get(caller)
        return {"Authorization": f"Bearer {token}"} if token else {}

    def unique(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}-{self.serial}"


Body = Callable[[World, str, str], dict[str, Any]]  # (world, owner, caller) -> JSON body
Target = Callable[[World, str], dict[str, int]]  # (world, owner) -> path parameters


@dataclass(frozen=True)
class Row:
    kind: Kind
    ok: int
    body: Body | None = None
    # The object that a LIST must show to those who may read it (an `Objects` attribute).
    listed: str | None = None
    # A submitter on another organisation's object: 404 hides that it exists.
    foreign: int = 404
    # Path parameters for the owner's object; `fresh` makes a new object per call, for writes
    # that move an object to a terminal state (a cancelled submission cannot be cancelled).
    fresh: Target | None = None
    # Where to read the object (or collection) a write must leave untouched when refused.
    witness: str | None = None
    # A query string (formatted like the path) for routes that need one.
    query: str | None = None


def system_body(world: World, owner: str, caller: str) -> dict[str, Any]:
    return {"name": world.unique(f"sys-{caller}"), "organisation": owner}


def endpoint_body(world: World, owner: str, caller: str) -> dict[str, Any]:
    return {
        "system_id": world.objects[owner].system_id,
        "base_url": world.sim.url,
        "served_model": "sim-model",
        "region": caller,
    }


def submission_body(world: World, owner: str, caller: str) -> dict[str, Any]:
    objects = world.objects[owner]
    return {
        "system_id": objects.system_id,
        "endpoint_id": objects.endpoint_id,
        "workload": "chat-smoke",
        "levels": [1],
        "requests": 1,
        "server_config": {"by": caller},
    }


def region_body(world: World, owner: str, caller: str) -> dict[str, Any]:
    return {"region": f"r-{caller}"}


def fresh_submission(world: World, owner: str) -> dict[str, int]:
    owner_caller = {"acme": "alice", "globex": "bob"}[owner]
    r = world.client.post(
        "/v1/submissions",
        headers=world.headers(owner_caller),
        json=submission_body(world, owner, owner_caller),
    )
    assert r.status_code == 201, r.text
    return {"submission_id": int(r.json()["id"])}


def in_review_submission(world: World, owner: str) -> dict[str, int]:
    """A fresh submission waiting for review, with one candidate point (no worker here: the
    run is finished and the review entered by hand, as the worker would)."""
    sid = fresh_submission(world, owner)["submission_id"]
    engine = world.client.app.state.engine
    with Session(engine) as session:
        sub = session.get(Submission, sid)
        assert sub is not None
        run = session.exec(select(Run).where(Run.submission_id == sid)).one()
        run.state = RunState.FINISHED
        session.add(run)
        assert run.id is not None
        point = Point(
            submission_id=sid,
            run_id=run.id,
            system_id=sub.system_id,
            workload_id=sub.workload_id,
            concurrency=1,
            metrics={"qps": 1.0},
        )
        session.add(point)
        session.flush()
        assert point.id is not None
        world.fresh_points[owner] = point.id
        sub.state = SubmissionState.MEASURED
        enter_review(session, submission=sub)
        session.commit()
    return {"submission_id": sid}


def decide_body(world: World, owner: str, caller: str) -> dict[str, Any]:
    point_id = world.fresh_points.get(owner, MISSING_ID)
    return {"decisions": [{"point_id": point_id, "decision": "reject", "comment": caller}]}


def slo_body(world: World, owner: str, caller: str) -> dict[str, Any]:
    return {
        "name": world.unique(f"slo-{caller}"),
        "limits": {"ttft_ms": {"percentile": 99, "max": 2000}},
    }


def slo_update_body(world: World, owner: str, caller: str) -> dict[str, Any]:
    return {"description": caller, "limits": {"ttft_ms": {"percentile": 99, "max": 1000}}}


# (method, path as in the OpenAPI) -> who may call it and what it answers.
ROUTES: dict[tuple[str, str], Row] = {
    ("GET", "/healthz"): Row(Kind.PUBLIC, 200),
    ("GET", "/readyz"): Row(Kind.PUBLIC, 200),
    ("POST", "/v1/systems"): Row(
        Kind.CREATE, 201, body=system_body, foreign=403, witness="/v1/systems?limit=500"
    ),
    ("GET", "/v1/systems"): Row(Kind.LIST, 200, listed="system_id"),
    ("GET", "/v1/systems/{system_id}"): Row(Kind.READ, 200),
    ("POST", "/v1/endpoints"): Row(
        Kind.CREATE, 201, body=endpoint_body, witness="/v1/endpoints?limit=500"
    ),
    ("GET", "/v1/endpoints"): Row(Kind.LIST, 200, listed="endpoint_id"),
    ("GET", "/v1/endpoints/{endpoint_id}"): Row(Kind.READ, 200),
    ("PATCH", "/v1/endpoints/{endpoint_id}"): Row(
        Kind.WRITE, 200, body=region_body, witness="/v1/endpoints/{endpoint_id}"
    ),
    ("POST", "/v1/submissions"): Row(
        Kind.CREATE, 201, body=submission_body, witness="/v1/submissions?limit=500"
    ),
    ("GET", "/v1/submissions"): Row(Kind.LIST, 200, listed="submission_id"),
    ("GET", "/v1/submissions/{submission_id}"): Row(Kind.READ, 200),
    ("POST", "/v1/submissions/{submission_id}/cancel"): Row(
        Kind.WRITE, 200, fresh=fresh_submission, witness="/v1/submissions/{submission_id}"
    ),
    ("POST", "/v1/submissions/{submission_id}/withdraw"): Row(
        Kind.WRITE, 200, fresh=fresh_submission, witness="/v1/submissions/{submission_id}"
    ),
    ("GET", "/v1/runs/{run_id}"): Row(Kind.READ, 200),
    ("GET", "/v1/runs/{run_id}/result_summary.json"): Row(Kind.READ, 200),
    ("GET", "/v1/runs/{run_id}/records.npz"): Row(Kind.READ, 200),
    ("GET", "/v1/points"): Row(Kind.LIST, 200, listed="point_id"),
    ("GET", "/v1/points/{point_id}"): Row(Kind.READ, 200),
    ("GET", "/v1/points/{point_id}/admissibility"): Row(Kind.READ, 200),
    ("GET", "/v1/points/{point_id}/cost"): Row(Kind.READ, 200),
    ("GET", "/v1/points/{point_id}/run_metadata.json"): Row(Kind.READ, 200),
    ("GET", "/v1/points/{point_id}/result_summary.json"): Row(Kind.READ, 200),
    ("PATCH", "/v1/systems/{system_id}"): Row(
        Kind.WRITE,
        200,
        body=lambda world, owner, caller: {"description": caller},
        witness="/v1/systems/{system_id}",
    ),
    # published results: frontiers, rankings, SLO profiles
    ("GET", "/v1/frontiers/{system_id}/{workload}"): Row(Kind.PUBLISHED, 200),
    ("GET", "/v1/frontiers/{system_id}/{workload}/versions"): Row(Kind.PUBLISHED, 200),
    ("GET", "/v1/frontiers/compare"): Row(
        Kind.PUBLISHED, 200, query="workload={workload}&system_id={system_id}"
    ),
    ("GET", "/v1/rankings"): Row(Kind.PUBLISHED, 200, query="workload={workload}&slo={name}"),
    ("GET", "/v1/slo-profiles"): Row(Kind.PUBLISHED, 200),
    ("GET", "/v1/slo-profiles/{name}"): Row(Kind.PUBLISHED, 200),
    ("POST", "/v1/slo-profiles"): Row(
        Kind.OPERATORS, 201, body=slo_body, witness="/v1/slo-profiles?limit=500"
    ),
    ("PUT", "/v1/slo-profiles/{name}"): Row(
        Kind.OPERATORS, 200, body=slo_update_body, witness="/v1/slo-profiles/{name}"
    ),
    # review: operators decide, submitters answer on their own submissions
    ("GET", "/v1/review/queue"): Row(Kind.OPERATORS, 200),
    ("GET", "/v1/submissions/{submission_id}/review"): Row(Kind.READ, 200),
    ("POST", "/v1/submissions/{submission_id}/review"): Row(
        Kind.OPERATE,
        200,
        body=decide_body,
        fresh=in_review_submission,
        witness="/v1/submissions/{submission_id}/review",
    ),
    ("POST", "/v1/submissions/{submission_id}/replies"): Row(
        Kind.WRITE,
        201,
        body=lambda world, owner, caller: {"comment": f"from {caller}"},
        witness="/v1/submissions/{submission_id}/review",
    ),
    ("PUT", "/v1/submissions/{submission_id}/publication"): Row(
        Kind.OPERATE,
        200,
        body=lambda world, owner, caller: {"publication": "preview"},
        witness="/v1/submissions/{submission_id}",
    ),
    ("POST", "/v1/submissions/{submission_id}/checks"): Row(
        Kind.OPERATE, 200, witness="/v1/submissions/{submission_id}/review"
    ),
}

ERROR_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}


def expected_status(row: Row, caller: Caller, owner: str) -> int:
    if row.kind is Kind.PUBLIC:
        return row.ok
    if caller.role is None or caller.revoked:
        return 401
    if caller.role is Role.OPERATOR or row.kind is Kind.PUBLISHED:
        return row.ok
    if row.kind is Kind.OPERATORS:
        return 403
    if row.kind is Kind.OPERATE:
        return 403 if caller.role is Role.VIEWER or caller.organisation == owner else row.foreign
    if caller.role is Role.VIEWER:
        return row.ok if row.kind in (Kind.LIST, Kind.READ) else 403
    if row.kind is Kind.LIST or caller.organisation == owner:
        return row.ok
    return row.foreign


def same_as_missing(
    world: World, method: str, template: str, row: Row, caller: Caller, r: Response
) -> str:
    """Why a foreign 404 can be told apart from a missing object's, or "" if it cannot."""
    ghost_path = template.format(**vars(world.objects[GHOST]))
    if row.query:
        ghost_path += "?" + row.query.format(**vars(world.objects[GHOST]))
    ghost_body = row.body(world, GHOST, caller.name) if row.body else None
    ghost = call(world, method, ghost_path, caller.name, ghost_body)

    def scrub(text: str) -> str:
        return re.sub(r"\d+", "N", text)

    if ghost.status_code != r.status_code or scrub(ghost.text) != scrub(r.text):
        return f"a missing one answers {ghost.status_code} {ghost.text[:200]}"
    return ""


def may_see(caller: Caller, owner: str) -> bool:
    return caller.role in (Role.OPERATOR, Role.VIEWER) or caller.organisation == owner


def assert_error_shape(r: Response, status: int) -> None:
    body = r.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert set(err) == {"code", "message", "fields"}, err
    assert err["code"] == ERROR_CODES.get(status, err["code"]), err
    assert isinstance(err["message"], str) and err["message"], err
    assert isinstance(err["fields"], list), err
    for f in err["fields"]:
        assert set(f) == {"field", "message"} and all(isinstance(v, str) for v in f.values()), f
    if status == 401:
        assert r.headers.get("WWW-Authenticate") == "Bearer"


# ---------------------------------------------------------------------------------- the world


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with start_in_thread(SimulatorConfig(ttft_ms=1, tpot_ms=1)) as s:
        yield s


def build_objects(world: World, owner_caller: str, tmp_path: Path) -> Objects:
    c, h = world.client, world.headers(owner_caller)
    r = c.post("/v1/systems", headers=h, json={"name": f"{owner_caller}-system"})
    assert r.status_code == 201, r.text
    system_id = int(r.json()["id"])
    r = c.post(
        "/v1/endpoints",
        headers=h,
        json={"system_id": system_id, "base_url": world.sim.url, "served_model": "sim-model"},
    )
    assert r.status_code == 201, r.text
    endpoint_id = int(r.json()["id"])
    objects = Objects(system_id, endpoint_id, 0, 0)
    world.objects[{"alice": "acme", "bob": "globex"}[owner_caller]] = objects
    r = c.post(
        "/v1/submissions",
        headers=h,
        json={
            "system_id": system_id,
            "endpoint_id": endpoint_id,
            "workload": "chat-smoke",
            "levels": [1],
            "requests": 1,
        },
    )
    assert r.status_code == 201, r.text
    objects.submission_id = int(r.json()["id"])
    objects.run_id = int(r.json()["runs"][0]["id"])
    # Finish the run by hand (no worker here) so that its result files exist to be refused.
    summary = tmp_path / f"{owner_caller}-result_summary.json"
    summary.write_text(json.dumps({"n_samples_issued": 1}))
    records = tmp_path / f"{owner_caller}-records.npz"
    records.write_bytes(b"not really npz")
    with Session(c.app.state.engine) as session:
        run = session.get(Run, objects.run_id)
        assert run is not None
        run.state = RunState.FINISHED
        run.summary = {"result_summary_path": str(summary)}
        run.artifact_path = str(records)
        run.artifact_sha256 = hashlib.sha256(records.read_bytes()).hexdigest()
        session.add(run)
        sub = session.get(Submission, objects.submission_id)
        assert sub is not None
        point = Point(
            submission_id=objects.submission_id,
            run_id=objects.run_id,
            system_id=sub.system_id,
            workload_id=sub.workload_id,
            concurrency=1,
            metrics={"qps": 1.0},
        )
        session.add(point)
        # and a published curve: a second run's point, accepted, on the system's frontier
        extra = Run(
            submission_id=objects.submission_id,
            run_key=f"{objects.submission_id}-published",
            kind=RunKind.PERFORMANCE,
            position=1,
            level=2,
            state=RunState.FINISHED,
        )
        session.add(extra)
        session.flush()
        assert extra.id is not None
        published = Point(
            submission_id=objects.submission_id,
            run_id=extra.id,
            system_id=sub.system_id,
            workload_id=sub.workload_id,
            concurrency=2,
            state=PointState.ACCEPTED,
            metrics={"qps": 2.0, "tps": 100.0, "tps_per_user_v1": 50.0},
        )
        session.add(published)
        session.flush()
        apply_change(
            session,
            system_id=sub.system_id,
            workload_id=sub.workload_id,
            accepted=[published],
            actor="test",
            submission_id=objects.submission_id,
        )
        session.commit()
        assert point.id is not None
        objects.point_id = point.id
    return objects


@pytest.fixture
def world(api: Any, sim: Simulator, tmp_path: Path) -> World:
    client, tokens = api
    engine = client.app.state.engine
    with Session(engine) as session:
        sync_workloads(session)
        revoked_row, revoked = create_token(session, organisation="acme", role=Role.SUBMITTER)
        assert revoked_row.id is not None
        revoke_token(session, token_id=revoked_row.id)
        session.commit()
    world = World(
        client=client,
        tokens={
            "alice": tokens.alice,
            "bob": tokens.bob,
            "operator": tokens.operator,
            "viewer": tokens.viewer,
            "revoked": revoked,
        },
        sim=sim,
    )
    build_objects(world, "alice", tmp_path)
    build_objects(world, "bob", tmp_path)
    world.objects[GHOST] = Objects(
        MISSING_ID, MISSING_ID, MISSING_ID, MISSING_ID, MISSING_ID, "no-such-workload", "no-such"
    )
    return world


# ---------------------------------------------------------------------------------- the tests


def app_routes() -> set[tuple[str, str]]:
    """(method, path) of every API route the app serves, hidden from the OpenAPI or not."""
    app = create_app(create_engine("sqlite://"), NullDispatcher())
    try:  # FastAPI >= 0.160 keeps included routers whole in app.routes; this flattens them
        from fastapi.routing import iter_route_contexts

        pairs = [(c.original_route, c.methods) for c in iter_route_contexts(app.routes)]
    except ImportError:
        pairs = [(r, getattr(r, "methods", None)) for r in app.routes]
    routes = {
        (method, route.path)
        for route, methods in pairs
        if isinstance(route, APIRoute)
        for method in methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    documented = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    assert routes and documented <= routes, documented - routes
    return routes


def test_the_table_covers_every_route() -> None:
    routes = app_routes()
    missing = sorted(routes - set(ROUTES))
    stale = sorted(set(ROUTES) - routes)
    assert not missing, f"routes without a row in ROUTES (who may call them?): {missing}"
    assert not stale, f"rows in ROUTES for routes the app no longer has: {stale}"


def call(world: World, method: str, path: str, caller: str, body: dict[str, Any] | None) -> Any:
    return world.client.request(method, path, headers=world.headers(caller), json=body)


def test_authorization_matrix(world: World) -> None:
    failures: list[str] = []
    cells = 0
    for (method, template), row in ROUTES.items():
        owners = OWNERS if row.kind is not Kind.PUBLIC else OWNERS[:1]
        for owner in owners:
            for caller in CALLERS:
                cells += 1
                params = row.fresh(world, owner) if row.fresh else vars(world.objects[owner]).copy()
                path = template.format(**params)
                if row.query:
                    path += "?" + row.query.format(**params)
                body = row.body(world, owner, caller.name) if row.body else None
                witness = row.witness.format(**params) if row.witness else None
                before = call(world, "GET", witness, "operator", None).json() if witness else None
                r = call(world, method, path, caller.name, body)
                want = expected_status(row, caller, owner)
                label = f"{method} {path} as {caller.name} on {owner}'s: "
                if r.status_code != want:
                    failures.append(label + f"got {r.status_code}, want {want}: {r.text[:200]}")
                    continue
                if r.status_code == 404 and caller.role is Role.SUBMITTER:
                    leak = same_as_missing(world, method, template, row, caller, r)
                    if leak:
                        failures.append(label + f"404 {r.text[:200]} leaks existence: {leak}")
                if 400 <= r.status_code < 500:
                    try:
                        assert_error_shape(r, r.status_code)
                    except AssertionError as exc:
                        failures.append(label + f"error shape: {exc}")
                    if witness:  # a refused write changes nothing
                        after = call(world, "GET", witness, "operator", None).json()
                        if after != before:
                            failures.append(label + f"refused, yet {witness} changed")
                if row.listed and r.status_code == 200:
                    wanted_id = getattr(world.objects[owner], row.listed)
                    shown = wanted_id in {item["id"] for item in r.json()["items"]}
                    if shown != may_see(caller, owner):
                        failures.append(label + f"lists it: {shown}, should: {not shown}")
    assert cells == sum(
        len(CALLERS) * (1 if row.kind is Kind.PUBLIC else len(OWNERS)) for row in ROUTES.values()
    )
    assert not failures, f"{len(failures)} of {cells} cells wrong:\n" + "\n".join(failures)


def test_unlisted_methods_are_405_in_the_error_shape(world: World) -> None:
    paths: dict[str, set[str]] = {}
    for method, template in ROUTES:
        paths.setdefault(template, set()).add(method)
    params = vars(world.objects["acme"])
    for template, methods in paths.items():
        for method in set(METHODS) - methods:
            r = call(world, method, template.format(**params), "operator", None)
            assert r.status_code == 405, (method, template, r.text)
            assert_error_shape(r, 405)


def test_idempotency_keys_belong_to_the_submissions_organisation(world: World) -> None:
    # An operator acting for acme retries with the same key: the first submission comes back,
    # not a conflict; bob's identical key is his own and makes his own submission.
    key = {"Idempotency-Key": "retry-1"}
    body = submission_body(world, "acme", "operator")
    first = world.client.post(
        "/v1/submissions", headers={**world.headers("operator"), **key}, json=body
    )
    assert first.status_code == 201, first.text
    again = world.client.post(
        "/v1/submissions", headers={**world.headers("operator"), **key}, json=body
    )
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"], again.text
    by_alice = world.client.post(
        "/v1/submissions", headers={**world.headers("alice"), **key}, json=body
    )
    assert by_alice.status_code == 200 and by_alice.json()["id"] == first.json()["id"]
    by_bob = world.client.post(
        "/v1/submissions",
        headers={**world.headers("bob"), **key},
        json=submission_body(world, "globex", "bob"),
    )
    assert by_bob.status_code == 201 and by_bob.json()["id"] != first.json()["id"]
