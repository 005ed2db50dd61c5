"""Review flows over the API with the roles: operators decide, submitters reply, viewers read.

Submissions are built as rows (measured, in review, with the findings each test needs); the
frontier they join is the real one (orchestrator.frontier.service).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from orchestrator.audit.models import AuditEntry
from orchestrator.frontier.models import FrontierVersion
from orchestrator.frontier.service import current
from orchestrator.runs.models import Point, PointState
from orchestrator.submissions.models import Submission, SubmissionState

PASSED = {"check": "errors.rate", "severity": "error", "passed": True, "message": "ok"}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def decisions(*pairs: tuple[int, str], comment: str = "") -> dict[str, Any]:
    return {
        "decisions": [{"point_id": p, "decision": d, "comment": comment} for p, d in pairs],
    }


def field_of(r: Any) -> str:
    return ",".join(f["field"] for f in r.json()["error"]["fields"])


def test_operator_accepts_and_points_join_the_published_frontier(
    review_api: tuple[TestClient, Any], build: Any, review_engine: Engine
) -> None:
    client, tokens = review_api
    system_id = build.system("acme")
    built = build.submission(system_id=system_id, levels=(1, 2, 4), findings=[PASSED])
    ids = built.point_ids

    queue = client.get("/v1/review/queue", headers=auth(tokens.operator))
    assert queue.status_code == 200, queue.text
    [item] = queue.json()["items"]
    assert item["submission_id"] == built.submission_id
    assert (item["points"], item["undecided"], item["blocking"]) == (3, 3, 0)
    assert item["waiting_since"] is None or isinstance(item["waiting_since"], str)
    for who in (tokens.alice, tokens.bob, tokens.viewer):
        assert client.get("/v1/review/queue", headers=auth(who)).status_code == 403

    # bob (globex) cannot see acme's candidates yet
    assert client.get(f"/v1/points/{ids[0]}", headers=auth(tokens.bob)).status_code == 404

    r = client.post(
        f"/v1/submissions/{built.submission_id}/review",
        headers=auth(tokens.operator),
        json={**decisions(*((i, "accept") for i in ids)), "comment": "clean sweep"},
    )
    assert r.status_code == 200, r.text
    review = r.json()
    assert review["submission"]["state"] == "accepted"
    assert review["submission"]["decided_at"] is not None
    assert {p["state"] for p in review["points"]} == {"accepted"}
    assert all(p["reviewed_by"].startswith("token:") for p in review["points"])
    assert [e["action"] for e in review["thread"]] == ["accept"] * 3
    assert review["frontier"]["version"] == 1 and sorted(review["frontier"]["members"]) == ids

    with Session(review_engine) as session:
        version = current(session, system_id=system_id, workload_id=built.workload_id)
        assert version is not None and version.version == 1
        assert sorted(version.added) == ids and version.submission_id == built.submission_id
        audited = session.exec(
            select(AuditEntry).where(
                AuditEntry.object_type == "point", AuditEntry.action == "accept"
            )
        ).all()
        assert sorted(a.object_id for a in audited) == ids

    # accepted points are published: any token reads and lists them
    for who in (tokens.bob, tokens.viewer, tokens.alice):
        assert client.get(f"/v1/points/{ids[0]}", headers=auth(who)).status_code == 200
        listed = client.get("/v1/points?limit=500", headers=auth(who)).json()["items"]
        assert {p["id"] for p in listed} >= set(ids)
    assert client.get("/v1/review/queue", headers=auth(tokens.operator)).json()["items"] == []
    again = client.post(
        f"/v1/submissions/{built.submission_id}/review",
        headers=auth(tokens.operator),
        json=decisions((ids[0], "accept")),
    )
    assert again.status_code == 409 and "already accepted" in again.text


def test_submitters_reply_on_their_own_submission_only_and_never_decide(
    review_api: tuple[TestClient, Any], build: Any
) -> None:
    client, tokens = review_api
    built = build.submission(system_id=build.system("acme"), findings=[PASSED])
    sid, ids = built.submission_id, built.point_ids
    body = decisions((ids[0], "accept"))
    assert (
        client.post(
            f"/v1/submissions/{sid}/review", headers=auth(tokens.alice), json=body
        ).status_code
        == 403
    )
    assert (
        client.post(
            f"/v1/submissions/{sid}/review", headers=auth(tokens.bob), json=body
        ).status_code
        == 404
    )
    assert (
        client.post(
            f"/v1/submissions/{sid}/review", headers=auth(tokens.viewer), json=body
        ).status_code
        == 403
    )
    assert client.post(f"/v1/submissions/{sid}/review", json=body).status_code == 401

    mine = client.post(
        f"/v1/submissions/{sid}/replies",
        headers=auth(tokens.alice),
        json={"comment": "the TTFT spike at 4 is a warm-up artefact", "point_id": ids[2]},
    )
    assert mine.status_code == 201, mine.text
    assert mine.json()["action"] == "reply" and mine.json()["point_id"] == ids[2]
    foreign = client.post(
        f"/v1/submissions/{sid}/replies", headers=auth(tokens.bob), json={"comment": "hi"}
    )
    assert foreign.status_code == 404
    missing = client.post(
        "/v1/submissions/999999/replies", headers=auth(tokens.bob), json={"comment": "hi"}
    )
    assert missing.status_code == 404
    assert foreign.json()["error"]["message"].replace(str(sid), "N") == missing.json()["error"][
        "message"
    ].replace("999999", "N")
    assert (
        client.post(
            f"/v1/submissions/{sid}/replies", headers=auth(tokens.viewer), json={"comment": "x"}
        ).status_code
        == 403
    )
    note = client.post(
        f"/v1/submissions/{sid}/replies", headers=auth(tokens.operator), json={"comment": "noted"}
    )
    assert note.status_code == 201 and note.json()["action"] == "comment"

    for who in (tokens.viewer, tokens.alice, tokens.operator):
        r = client.get(f"/v1/submissions/{sid}/review", headers=auth(who))
        assert r.status_code == 200, r.text
        assert [e["action"] for e in r.json()["thread"]] == ["reply", "comment"]
        assert {p["state"] for p in r.json()["points"]} == {"candidate"}
    assert client.get(f"/v1/submissions/{sid}/review", headers=auth(tokens.bob)).status_code == 404

    bad = client.post(
        f"/v1/submissions/{sid}/replies", headers=auth(tokens.alice), json={"comment": ""}
    )
    assert bad.status_code == 422 and "comment" in field_of(bad)
    other = build.submission(system_id=build.system("acme"))
    wrong_point = client.post(
        f"/v1/submissions/{sid}/replies",
        headers=auth(tokens.alice),
        json={"comment": "x", "point_id": other.point_ids[0]},
    )
    assert wrong_point.status_code == 422 and field_of(wrong_point) == "point_id"


def test_a_blocking_finding_prevents_acceptance(
    review_api: tuple[TestClient, Any], build: Any
) -> None:
    client, tokens = review_api
    system_id = build.system("acme")
    probe = build.submission(system_id=system_id, levels=(1,))  # to learn the next ids
    first = probe.point_ids[0] + 1
    findings = [
        PASSED,
        {
            "check": "duration.min",
            "severity": "error",
            "passed": False,
            "message": "level 1 ran 12 s; the programme asks 600 s",
            "point_id": first,
        },
        {"check": "regions.count", "severity": "warning", "passed": False, "message": "few"},
    ]
    built = build.submission(system_id=system_id, levels=(1, 2), findings=findings)
    sid, ids = built.submission_id, built.point_ids
    assert ids[0] == first

    view = client.get(f"/v1/submissions/{sid}/review", headers=auth(tokens.operator)).json()
    assert [p["blocking"] for p in view["points"]] == [["duration.min"], []]
    assert view["findings_summary"] == {
        "total": 3,
        "passed": 1,
        "failed": 2,
        "blocking": 1,
        "warnings": 1,
    }
    assert view["submission"]["findings_summary"]["blocking"] == 1

    refused = client.post(
        f"/v1/submissions/{sid}/review",
        headers=auth(tokens.operator),
        json=decisions((ids[1], "accept"), (ids[0], "accept")),
    )
    assert refused.status_code == 409, refused.text
    assert "duration.min" in refused.json()["error"]["message"]
    assert field_of(refused) == "decisions[1].point_id"
    # nothing of the refused call happened
    view = client.get(f"/v1/submissions/{sid}/review", headers=auth(tokens.operator)).json()
    assert {p["state"] for p in view["points"]} == {"candidate"} and view["thread"] == []

    no_reason = client.post(
        f"/v1/submissions/{sid}/review",
        headers=auth(tokens.operator),
        json=decisions((ids[0], "reject")),
    )
    assert no_reason.status_code == 422 and field_of(no_reason) == "decisions[0].comment"
    ok = client.post(
        f"/v1/submissions/{sid}/review",
        headers=auth(tokens.operator),
        json={
            "decisions": [
                {"point_id": ids[0], "decision": "reject", "comment": "too short a run"},
                {"point_id": ids[1], "decision": "accept"},
            ]
        },
    )
    assert ok.status_code == 200, ok.text
    assert ok.json()["submission"]["state"] == "accepted"
    assert [p["state"] for p in ok.json()["points"]] == ["rejected", "accepted"]
    assert ok.json()["points"][0]["review_comment"] == "too short a run"

    # a blocking finding about the whole submission blocks every point
    whole = build.submission(
        system_id=build.system("acme"),
        findings=[
            {"check": "metadata.complete", "severity": "error", "passed": False, "message": "m"}
        ],
    )
    r = client.post(
        f"/v1/submissions/{whole.submission_id}/review",
        headers=auth(tokens.operator),
        json=decisions((whole.point_ids[2], "accept")),
    )
    assert r.status_code == 409 and "metadata.complete" in r.text


def test_rejecting_every_point_rejects_the_submission(
    review_api: tuple[TestClient, Any], build: Any, review_engine: Engine
) -> None:
    client, tokens = review_api
    built = build.submission(system_id=build.system("globex"), levels=(1, 2))
    r = client.post(
        f"/v1/submissions/{built.submission_id}/review",
        headers=auth(tokens.operator),
        json={
            "decisions": [{"point_id": i, "decision": "reject"} for i in built.point_ids],
            "comment": "the harness saturated at every level",
        },
    )
    assert r.status_code == 200, r.text
    assert r.json()["submission"]["state"] == "rejected"
    assert {p["review_comment"] for p in r.json()["points"]} == {
        "the harness saturated at every level"
    }
    with Session(review_engine) as session:
        assert session.exec(select(FrontierVersion)).all() == []


def test_bad_decisions_are_4xx_naming_the_field(
    review_api: tuple[TestClient, Any], build: Any
) -> None:
    client, tokens = review_api
    built = build.submission(system_id=build.system("acme"))
    other = build.submission(system_id=build.system("globex"))
    url = f"/v1/submissions/{built.submission_id}/review"
    op = auth(tokens.operator)
    p = built.point_ids[0]
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"decisions": []}, 422, "body.decisions"),
        ({}, 422, "body.decisions"),
        (decisions((999_999, "accept")), 404, "decisions[0].point_id"),
        (decisions((other.point_ids[0], "accept")), 422, "decisions[0].point_id"),
        (decisions((p, "accept"), (p, "accept")), 422, "decisions[1].point_id"),
        (decisions((p, "maybe")), 422, "body.decisions.0.decision"),
        (decisions((2**31, "accept")), 422, "body.decisions.0.point_id"),
        (decisions((p, "reject"), comment="x" * 4001), 422, "body.decisions.0.comment"),
        (decisions((p, "reject"), comment="bad\x00byte"), 422, "body.decisions.0.comment"),
        ({**decisions((p, "accept")), "extra": 1}, 422, "body.extra"),
        (decisions((p, "reject"), comment="   "), 422, "decisions[0].comment"),
    ]
    for body, status, where in cases:
        r = client.post(url, headers=op, json=body)
        assert r.status_code == status, (body, r.text)
        assert where in field_of(r), (body, r.text)
    assert (
        client.post(
            "/v1/submissions/0/review", headers=op, json=decisions((p, "accept"))
        ).status_code
        == 422
    )
    assert (
        client.post(
            "/v1/submissions/999999/review", headers=op, json=decisions((p, "accept"))
        ).status_code
        == 404
    )


def test_withdrawn_and_unfinished_submissions_cannot_be_decided(
    review_api: tuple[TestClient, Any], build: Any
) -> None:
    client, tokens = review_api
    built = build.submission(system_id=build.system("acme"))
    r = client.post(f"/v1/submissions/{built.submission_id}/withdraw", headers=auth(tokens.alice))
    assert r.status_code == 200 and r.json()["state"] == "withdrawn"
    r = client.post(
        f"/v1/submissions/{built.submission_id}/review",
        headers=auth(tokens.operator),
        json=decisions((built.point_ids[0], "accept")),
    )
    assert r.status_code == 409 and "withdrawn" in r.text
    running = build.submission(system_id=build.system("acme"), state=SubmissionState.RUNNING)
    r = client.post(
        f"/v1/submissions/{running.submission_id}/review",
        headers=auth(tokens.operator),
        json=decisions((running.point_ids[0], "accept")),
    )
    assert r.status_code == 409 and "not in review" in r.text


def test_an_update_window_of_zero_refuses_a_second_submissions_points(
    review_api: tuple[TestClient, Any],
    build: Any,
    use_programme: Callable[..., Any],
    review_engine: Engine,
) -> None:
    assert use_programme(update_window_days=0).update_window_days == 0
    client, tokens = review_api
    system_id = build.system("acme")
    first = build.submission(system_id=system_id, levels=(1, 2))
    second = build.submission(system_id=system_id, levels=(4, 8))
    op = auth(tokens.operator)

    r = client.post(
        f"/v1/submissions/{first.submission_id}/review",
        headers=op,
        json=decisions((first.point_ids[0], "accept")),
    )
    assert r.status_code == 200, r.text
    frozen = client.post(
        f"/v1/submissions/{second.submission_id}/review",
        headers=op,
        json=decisions((second.point_ids[0], "accept")),
    )
    assert frozen.status_code == 409, frozen.text
    assert "frozen" in frozen.json()["error"]["message"]
    view = client.get(f"/v1/submissions/{second.submission_id}/review", headers=op).json()
    assert (
        view["frontier"]["window_open"] is False and "frozen" in view["frontier"]["window_message"]
    )
    # the creating submission may still complete its own curve
    r = client.post(
        f"/v1/submissions/{first.submission_id}/review",
        headers=op,
        json=decisions((first.point_ids[1], "accept")),
    )
    assert r.status_code == 200 and r.json()["frontier"]["version"] == 2
    # and the second submission can still be rejected, which closes it
    r = client.post(
        f"/v1/submissions/{second.submission_id}/review",
        headers=op,
        json=decisions(*((i, "reject") for i in second.point_ids), comment="curve frozen"),
    )
    assert r.status_code == 200 and r.json()["submission"]["state"] == "rejected"
    with Session(review_engine) as session:
        states = {p.id: p.state for p in session.exec(select(Point)).all()}
        assert states[second.point_ids[0]] is PointState.REJECTED


def test_publication_status_and_rechecks_are_operators_work(
    review_api: tuple[TestClient, Any], build: Any, review_engine: Engine
) -> None:
    client, tokens = review_api
    built = build.submission(system_id=build.system("acme"))
    sid = built.submission_id
    url = f"/v1/submissions/{sid}/publication"
    body = {"publication": "preview", "comment": "hardware ships next quarter"}
    assert client.put(url, headers=auth(tokens.alice), json=body).status_code == 403
    assert client.put(url, headers=auth(tokens.bob), json=body).status_code == 404
    assert client.put(url, headers=auth(tokens.viewer), json=body).status_code == 403
    bad = client.put(url, headers=auth(tokens.operator), json={"publication": "soon"})
    assert bad.status_code == 422 and field_of(bad) == "body.publication"
    r = client.put(url, headers=auth(tokens.operator), json=body)
    assert r.status_code == 200 and r.json()["publication"] == "preview"
    assert (
        client.get(f"/v1/submissions/{sid}", headers=auth(tokens.alice)).json()["publication"]
        == "preview"
    )
    view = client.get(f"/v1/submissions/{sid}/review", headers=auth(tokens.alice)).json()
    [entry] = view["thread"]
    assert entry["action"] == "publication" and entry["data"] == {
        "from": "available",
        "to": "preview",
    }

    checks = f"/v1/submissions/{sid}/checks"
    assert client.post(checks, headers=auth(tokens.alice)).status_code == 403
    assert client.post(checks, headers=auth(tokens.bob)).status_code == 404
    r = client.post(checks, headers=auth(tokens.operator))
    assert r.status_code == 200, r.text
    assert r.json()["findings"] and r.json()["submission"]["checked_at"] is not None
    assert r.json()["thread"][-1]["comment"].startswith("re-run: automated checks")
    with Session(review_engine) as session:
        sub = session.get(Submission, sid)
        assert sub is not None and sub.findings == r.json()["findings"]
        actions = session.exec(
            select(AuditEntry.action).where(
                AuditEntry.object_type == "submission", AuditEntry.object_id == sid
            )
        ).all()
        assert {"publication", "recheck"} <= set(actions)
