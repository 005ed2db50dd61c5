"""`rollbench review list|show|accept|reject` on the store the settings name, as an operator."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner, Result

from orchestrator.audit.models import AuditEntry
from orchestrator.config import get_settings
from orchestrator.review.cli import review_app
from orchestrator.runs.models import Point, PointState
from orchestrator.submissions.models import Submission, SubmissionState

PASSED = {"check": "errors.rate", "severity": "error", "passed": True, "message": "ok"}


@pytest.fixture
def cli_store(db_url: str, review_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Engine:
    monkeypatch.setenv("ROLLBENCH_DATABASE_URL", db_url)
    monkeypatch.setenv("COLUMNS", "200")
    get_settings.cache_clear()
    return review_engine


def run(*args: str) -> Result:
    return CliRunner().invoke(review_app, list(args))


def test_list_show_accept_reject(cli_store: Engine, build: Any) -> None:
    blocked_finding = {
        "check": "harness.saturated",
        "severity": "error",
        "passed": False,
        "message": "the client delivered 80 % of the target concurrency",
    }
    system_id = build.system("acme", name="fast-box")
    good = build.submission(system_id=system_id, levels=(1, 2, 4), findings=[PASSED])
    bad = build.submission(system_id=build.system("globex"), levels=(8,))
    with Session(cli_store) as session:  # the blocked point's id is known only now
        sub = session.get(Submission, bad.submission_id)
        assert sub is not None
        sub.findings = [{**blocked_finding, "point_id": bad.point_ids[0]}]
        session.add(sub)
        session.commit()

    listed = run("list")
    assert listed.exit_code == 0, listed.output
    assert "2 submission(s) waiting" in listed.output and "fast-box" in listed.output
    assert "chat-smoke v1" in listed.output

    shown = run("show", str(bad.submission_id))
    assert shown.exit_code == 0, shown.output
    assert "harness.saturated" in shown.output and "80 % of the target" in shown.output
    assert "1 blocking finding(s)" in shown.output and "candidate" in shown.output

    refused = run("accept", str(bad.submission_id))
    assert refused.exit_code == 2
    assert "harness.saturated" in refused.output and "decisions[0].point_id" in refused.output

    no_reason = run("reject", str(bad.submission_id))
    assert no_reason.exit_code == 2 and "--comment" in no_reason.output
    rejected = run("reject", str(bad.submission_id), "--comment", "saturated client")
    assert rejected.exit_code == 0, rejected.output
    assert "the submission is rejected" in rejected.output

    one = run("accept", str(good.submission_id), "--point", str(good.point_ids[0]))
    assert one.exit_code == 0 and "the submission is in_review" in one.output, one.output
    rest = run("accept", str(good.submission_id), "--comment", "looks right")
    assert rest.exit_code == 0 and "the submission is accepted" in rest.output, rest.output

    with Session(cli_store) as session:
        points = {p.id: p for p in session.exec(select(Point)).all()}
        assert all(points[i].state is PointState.ACCEPTED for i in good.point_ids)
        assert {points[i].reviewed_by for i in good.point_ids} == {"cli"}
        assert points[bad.point_ids[0]].review_comment == "saturated client"
        sub = session.get(Submission, good.submission_id)
        assert sub is not None and sub.state is SubmissionState.ACCEPTED
        actors = set(session.exec(select(AuditEntry.actor).where(AuditEntry.action == "accept")))
        assert actors == {"cli"}

    shown = run("show", str(good.submission_id))
    assert "frontier: version 2" in shown.output and "looks right" in shown.output
    empty = run("list")
    assert "0 submission(s) waiting" in empty.output and "fast-box" not in empty.output
    missing = run("show", "999999")
    assert missing.exit_code == 2 and "no submission 999999" in missing.output
    again = run("accept", str(good.submission_id))
    assert again.exit_code == 2 and "already accepted" in again.output
