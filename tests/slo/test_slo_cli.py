"""`rollbench slo list|show|check` and `rollbench rank`, on both stores, as a user runs them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from slo.slo_world import Curve, two_systems
from sqlmodel import Session
from typer.testing import CliRunner, Result

from orchestrator import migrate
from orchestrator.cli import app
from orchestrator.config import get_settings
from orchestrator.db import make_engine


@pytest.fixture
def curves(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Curve, Curve]]:
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ROLLBENCH_DATABASE_URL", db_url)
    get_settings.cache_clear()
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    with Session(engine, expire_on_commit=False) as session:
        small, large = two_systems(session)
        session.commit()
    engine.dispose()
    yield small, large
    get_settings.cache_clear()


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def usage_error(result: Result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rollbench: error: "), result.stderr
    return lines[0]


def rows_of(output: str) -> list[str]:
    return [line for line in output.splitlines() if "/small" in line or "/large" in line]


def test_rank_changes_with_the_slo(curves: tuple[Curve, Curve]) -> None:
    tight = run("rank", "synthetic-chat", "--slo", "interactive")
    assert tight.exit_code == 0, tight.stderr
    table = rows_of(tight.stdout)
    assert "acme/small" in table[0] and "30.00" in table[0] and "globex/large" in table[1]
    assert "TTFT p99 ≤ 1000 ms" in tight.stdout and "at SLO interactive" in tight.stdout
    assert "quality: not measured (workload has no accuracy suite)" in tight.stdout
    assert "USD" in table[0]  # the cost band of the best point

    loose = run("rank", "synthetic-chat", "--slo", "batch")
    assert loose.exit_code == 0, loose.stderr
    table = rows_of(loose.stdout)
    assert "globex/large" in table[0] and "200.00" in table[0] and "acme/small" in table[1]
    assert "quality: not measured" in loose.stdout


def test_rank_says_why_a_system_has_no_admissible_point(curves: tuple[Curve, Curve]) -> None:
    result = run("rank", "synthetic-chat", "--slo", "realtime")
    assert result.exit_code == 0, result.stderr
    assert "globex/large: no admissible point — every point exceeds TTFT p90 250 ms" in (
        result.stdout.replace("\n", " ")
    )


def test_rank_defaults_to_the_programme_slo(curves: tuple[Curve, Curve]) -> None:
    result = run("rank", "synthetic-chat")
    assert result.exit_code == 0 and "at SLO interactive" in result.stdout


def test_rank_errors_are_one_line(curves: tuple[Curve, Curve]) -> None:
    assert "no SLO profile 'nope'" in usage_error(run("rank", "synthetic-chat", "--slo", "nope"))
    assert "no workload nope" in usage_error(run("rank", "nope", "--slo", "batch"))


def test_slo_list_and_show(curves: tuple[Curve, Curve]) -> None:
    listed = run("slo", "list")
    assert listed.exit_code == 0, listed.stderr
    for name in ("batch", "interactive", "realtime"):
        assert name in listed.stdout
    assert "TTFT p90 ≤ 250 ms" in listed.stdout
    shown = run("slo", "show", "interactive")
    assert shown.exit_code == 0, shown.stderr
    assert "TPOT p99" in shown.stdout and "50 ms" in shown.stdout and "0.1 %" in shown.stdout
    assert "no SLO profile 'gone'" in usage_error(run("slo", "show", "gone"))


def test_slo_check_a_point(curves: tuple[Curve, Curve]) -> None:
    small, large = curves
    ok = run("slo", "check", str(small.points["c8"].id), "--slo", "interactive")
    assert ok.exit_code == 0, ok.stderr
    assert "ADMISSIBLE" in ok.stdout and "TTFT p99 300 ms <= 1000 ms" in ok.stdout
    assert "cost (hourly)" in ok.stdout and "quality: not measured" in ok.stdout
    bad = run("slo", "check", str(large.points["c64"].id), "--slo", "interactive")
    assert bad.exit_code == 0 and "NOT admissible" in bad.stdout
    assert "no cost: outside the SLO interactive" in bad.stdout.replace("\n", " ")
    assert "no point 999999" in usage_error(run("slo", "check", "999999"))
