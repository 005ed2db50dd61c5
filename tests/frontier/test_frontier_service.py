"""The frontier service on real stores: versions, supersession, dominance, the update window."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import select

from orchestrator.audit.models import AuditEntry
from orchestrator.db import utcnow
from orchestrator.errors import Conflict, Invalid, NotFound
from orchestrator.frontier import service
from orchestrator.frontier.pareto import UnknownAxis
from orchestrator.runs.models import PointState
from orchestrator.submissions.models import SubmissionSource

from .conftest import World, use_programme


def _curve(world: World) -> tuple[int, int]:
    return world.system("sys-a"), world.workload("chat")


def test_versions_increment_and_record_added(world: World) -> None:
    system_id, workload_id = _curve(world)
    sub = world.submission(system_id, workload_id)
    first = world.points(sub, [(1, 100.0, 10.0), (4, 300.0, 12.0)])
    v1 = world.apply(system_id, workload_id, first, submission_id=sub)
    assert v1 is not None and v1.version == 1
    assert v1.added == sorted(first) and v1.members == sorted(first)
    assert v1.pareto == sorted(first)  # per-user TPS falls as TPS rises: both on it
    second = world.points(sub, [(16, 800.0, 25.0)])
    v2 = world.apply(system_id, workload_id, second, submission_id=sub)
    assert v2 is not None and v2.version == 2
    assert v2.added == second and v2.superseded == [] and v2.dominated == []
    assert v2.members == sorted(first + second)
    with world.session() as s:
        rows = service.history(s, system_id=system_id, workload_id=workload_id)
        assert [v.version for v in rows] == [1, 2]
        current = service.current(s, system_id=system_id, workload_id=workload_id)
        assert current is not None and current.version == 2
        audit = s.exec(select(AuditEntry).where(AuditEntry.object_type == "frontier_version")).all()
        assert [a.to_state for a in audit] == ["v1", "v2"]


def test_empty_change_writes_nothing(world: World) -> None:
    system_id, workload_id = _curve(world)
    assert world.apply(system_id, workload_id, []) is None
    with world.session() as s:
        assert service.current(s, system_id=system_id, workload_id=workload_id) is None


def test_newer_point_at_same_concurrency_supersedes(world: World) -> None:
    system_id, workload_id = _curve(world)
    sub1 = world.submission(system_id, workload_id)
    old = world.points(sub1, [(8, 500.0, 20.0), (2, 150.0, 11.0)])
    world.apply(system_id, workload_id, old, submission_id=sub1)
    sub2 = world.submission(system_id, workload_id)
    new = world.points(sub2, [(8, 480.0, 21.0)])
    v2 = world.apply(system_id, workload_id, new, submission_id=sub2)
    assert v2 is not None
    assert v2.superseded == [old[0]]
    assert v2.members == sorted([old[1], new[0]])
    replaced = world.point(old[0])
    assert replaced.state is PointState.SUPERSEDED and replaced.superseded_by == new[0]
    assert world.point(new[0]).state is PointState.ACCEPTED
    with world.session() as s:
        entries = s.exec(
            select(AuditEntry).where(
                AuditEntry.object_type == "point", AuditEntry.object_id == old[0]
            )
        ).all()
        assert [(e.action, e.to_state) for e in entries] == [("supersede", "superseded")]


def test_newly_dominated_points_are_listed(world: World) -> None:
    system_id, workload_id = _curve(world)
    sub = world.submission(system_id, workload_id)
    old = world.points(sub, [(4, 300.0, 12.0), (16, 800.0, 25.0)])
    world.apply(system_id, workload_id, old, submission_id=sub)
    # a point better on both axes than the concurrency-4 one, at another concurrency
    better = world.points(sub, [(6, 320.0, 11.0)])
    v2 = world.apply(system_id, workload_id, better, submission_id=sub)
    assert v2 is not None
    assert v2.dominated == [old[0]]
    assert old[0] in v2.members and old[0] not in v2.pareto
    assert set(v2.pareto) == {old[1], better[0]}
    with world.session() as s:
        view = service.view(s, system_id=system_id, workload_name="chat")
        status = {m.point.id: m for m in view.members}
        assert status[old[0]].dominated_by == (better[0],)
        assert status[better[0]].on_frontier and status[old[1]].on_frontier
        assert [c.id for c in view.steps.corners] == [old[1], better[0]]


def test_update_window_zero_freezes_after_creating_submission(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_programme(tmp_path, monkeypatch, 0)
    system_id, workload_id = _curve(world)
    creator = world.submission(system_id, workload_id)
    first = world.points(creator, [(1, 100.0, 10.0)])
    world.apply(system_id, workload_id, first, submission_id=creator)
    # the creating submission may still complete its own curve
    more = world.points(creator, [(4, 300.0, 12.0)])
    v2 = world.apply(
        system_id, workload_id, more, submission_id=creator, now=utcnow() + timedelta(days=3)
    )
    assert v2 is not None and v2.version == 2
    other = world.submission(system_id, workload_id)
    late = world.points(other, [(8, 500.0, 20.0)])
    with pytest.raises(Conflict) as err:
        world.apply(system_id, workload_id, late, submission_id=other)
    assert "frozen" in err.value.message and "0 days" in err.value.message
    with world.session() as s:
        with pytest.raises(Conflict):
            service.check_window(
                s, system_id=system_id, workload_id=workload_id, submission_id=other
            )
        service.check_window(s, system_id=system_id, workload_id=workload_id, submission_id=creator)
        # nothing half-written: still version 2, the late point untouched
        current = service.current(s, system_id=system_id, workload_id=workload_id)
        assert current is not None and current.version == 2


def test_update_window_open_then_closed(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_programme(tmp_path, monkeypatch, 30)
    system_id, workload_id = _curve(world)
    creator = world.submission(system_id, workload_id)
    first = world.points(creator, [(1, 100.0, 10.0)])
    world.apply(system_id, workload_id, first, submission_id=creator)
    other = world.submission(system_id, workload_id)
    with world.session() as s:
        service.check_window(
            s,
            system_id=system_id,
            workload_id=workload_id,
            submission_id=other,
            now=utcnow() + timedelta(days=29),
        )
        with pytest.raises(Conflict):
            service.check_window(
                s,
                system_id=system_id,
                workload_id=workload_id,
                submission_id=other,
                now=utcnow() + timedelta(days=31),
            )
        # no curve yet on another workload: always open
        service.check_window(
            s, system_id=system_id, workload_id=world.workload("other"), submission_id=other
        )


def test_imported_points_are_ordinary_members(world: World) -> None:
    system_id, workload_id = _curve(world)
    baseline = world.submission(system_id, workload_id, source=SubmissionSource.IMPORTED)
    ids = world.points(baseline, [(16, 700.0, 22.0)])
    version = world.apply(system_id, workload_id, ids, submission_id=baseline)
    assert version is not None and version.pareto == ids


def test_points_missing_a_figure_are_reported_not_placed(world: World) -> None:
    system_id, workload_id = _curve(world)
    sub = world.submission(system_id, workload_id)
    ids = world.points(sub, [(1, 100.0, 10.0), (2, None, None)])
    version = world.apply(system_id, workload_id, ids, submission_id=sub)
    assert version is not None and version.pareto == [ids[0]]
    with world.session() as s:
        view = service.view(s, system_id=system_id, workload_name="chat")
        assert view.not_measured == (ids[1],)
        assert [m.measured for m in view.members] == [True, False]


def test_apply_change_refuses_points_of_another_curve(world: World) -> None:
    system_id, workload_id = _curve(world)
    sub = world.submission(system_id, workload_id)
    ids = world.points(sub, [(1, 100.0, 10.0)])
    with pytest.raises(Invalid):
        world.apply(system_id, world.workload("else"), ids)
    candidate = world.points(sub, [(2, 100.0, 10.0)], state=PointState.CANDIDATE)
    with pytest.raises(Invalid):
        world.apply(system_id, workload_id, candidate)


def test_views_versions_and_errors(world: World) -> None:
    system_id, workload_id = _curve(world)
    sub = world.submission(system_id, workload_id)
    world.apply(system_id, workload_id, world.points(sub, [(1, 100.0, 10.0)]), submission_id=sub)
    world.apply(system_id, workload_id, world.points(sub, [(4, 300.0, 12.0)]), submission_id=sub)
    with world.session() as s:
        v1 = service.view(s, system_id=system_id, workload_name="chat", version=1)
        assert len(v1.members) == 1 and v1.version.version == 1
        conc = service.view(s, system_id=system_id, workload_name="chat", x="concurrency", y="tps")
        assert [c.x for c in conc.steps.corners] == [1.0, 4.0]
        with pytest.raises(NotFound) as nf:
            service.view(s, system_id=system_id, workload_name="chat", version=9)
        assert nf.value.field == "version"
        with pytest.raises(NotFound):
            service.view(s, system_id=system_id, workload_name="nope")
        with pytest.raises(NotFound):
            service.view(s, system_id=999_999, workload_name="chat")
        with pytest.raises(UnknownAxis) as ua:
            service.view(s, system_id=system_id, workload_name="chat", x="speed")
        assert ua.value.field == "x" and "tps_per_user" in str(ua.value)


def test_workload_name_resolves_to_newest_version_with_a_frontier(world: World) -> None:
    system_id, w1 = _curve(world)
    world.workload("chat", 2)  # newer definition, no frontier yet for this system
    sub = world.submission(system_id, w1)
    world.apply(system_id, w1, world.points(sub, [(1, 100.0, 10.0)]), submission_id=sub)
    with world.session() as s:
        view = service.view(s, system_id=system_id, workload_name="chat")
        assert view.workload.id == w1
        with pytest.raises(NotFound):
            service.view(s, system_id=system_id, workload_name="chat", workload_version=2)


def test_compare_reads_every_system_on_one_workload_version(world: World) -> None:
    a, workload_id = _curve(world)
    b = world.system("sys-b", org="globex")
    c = world.system("sys-c")
    for system_id, specs in ((a, [(1, 100.0, 10.0), (8, 500.0, 20.0)]), (b, [(4, 450.0, 9.0)])):
        sub = world.submission(system_id, workload_id)
        world.apply(system_id, workload_id, world.points(sub, specs), submission_id=sub)
    with world.session() as s:
        result = service.compare(s, workload_name="chat", system_ids=[a, b, c, a])
        assert [curve.system.id for curve in result.curves] == [a, b, c]
        assert [len(curve.steps.corners) for curve in result.curves] == [2, 1, 0]
        assert result.curves[2].version is None
        with pytest.raises(Invalid):
            service.compare(s, workload_name="chat", system_ids=[])
        with pytest.raises(NotFound):
            service.compare(s, workload_name="chat", system_ids=[a, 999_999])


def test_a_naive_now_is_taken_as_utc(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_programme(tmp_path, monkeypatch, 1)
    system_id, workload_id = _curve(world)
    creator = world.submission(system_id, workload_id)
    world.apply(
        system_id, workload_id, world.points(creator, [(1, 100.0, 10.0)]), submission_id=creator
    )
    naive_later = (utcnow() + timedelta(days=2)).replace(tzinfo=None)
    with world.session() as s, pytest.raises(Conflict):
        service.check_window(
            s, system_id=system_id, workload_id=workload_id, submission_id=None, now=naive_later
        )
