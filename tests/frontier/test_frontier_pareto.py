"""Properties of the Pareto set and the step function, and worked examples of the steps."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.frontier import pareto
from orchestrator.frontier.pareto import AXES, AxisPoint, dominates, pareto_set, step_function

# small integer figures make ties (equal x, equal y, identical points) frequent
figure = st.integers(min_value=0, max_value=12).map(float)


@st.composite
def point_sets(draw: st.DrawFn) -> list[AxisPoint]:
    pairs = draw(st.lists(st.tuples(figure, figure), max_size=25))
    return [AxisPoint(i + 1, x, y) for i, (x, y) in enumerate(pairs)]


VIEWS = [
    (AXES["tps_per_user"], AXES["tps"]),
    (AXES["ttft_p99_ms"], AXES["qps"]),
    (AXES["concurrency"], AXES["tps"]),
    (AXES["tpot_p90_ms"], AXES["ttft_p99_ms"]),
]
views = st.sampled_from(VIEWS)


def _ids(points: list[AxisPoint]) -> list[int]:
    return sorted(p.id for p in points)


@given(point_sets(), views)
def test_no_frontier_point_is_dominated(points: list[AxisPoint], view: tuple) -> None:
    x, y = view
    front = pareto_set(points, x, y)
    for f in front:
        assert not any(dominates(q, f, x, y) for q in points)


@given(point_sets(), views)
def test_every_dropped_point_is_dominated_by_a_frontier_point(
    points: list[AxisPoint], view: tuple
) -> None:
    x, y = view
    front = pareto_set(points, x, y)
    kept = {p.id for p in front}
    for p in points:
        if p.id not in kept:
            assert pareto.dominators(p, front, x, y), p


@given(point_sets(), views, st.data())
def test_adding_a_dominated_point_changes_nothing(
    points: list[AxisPoint], view: tuple, data: st.DataObject
) -> None:
    x, y = view
    front = pareto_set(points, x, y)
    if not front:
        return
    base = data.draw(st.sampled_from(front))
    # strictly worse on at least one axis, no better on the other
    # whole numbers: a tiny float delta would vanish in the addition and not be worse at all
    dx = float(data.draw(st.integers(min_value=0, max_value=5)))
    dy = float(data.draw(st.integers(min_value=0, max_value=5)))
    if dx == 0 and dy == 0:
        dy = 1.0
    worse = AxisPoint(
        10_000,
        base.x - dx if x.higher_is_better else base.x + dx,
        base.y - dy if y.higher_is_better else base.y + dy,
    )
    assert dominates(base, worse, x, y)
    assert pareto_set([*points, worse], x, y) == front
    assert step_function([*points, worse], x, y) == step_function(points, x, y)


@given(point_sets(), views, st.randoms(use_true_random=False))
def test_insertion_order_does_not_matter(points: list[AxisPoint], view: tuple, rnd: object) -> None:
    x, y = view
    shuffled = list(points)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert pareto_set(shuffled, x, y) == pareto_set(points, x, y)
    assert step_function(shuffled, x, y) == step_function(points, x, y)
    all_a = step_function(shuffled, x, y, all_points=True)
    assert all_a == step_function(points, x, y, all_points=True)


def _reachable(points: list[AxisPoint], at_x: float, x: pareto.Axis, y: pareto.Axis) -> float:
    """The best y among points at `at_x` or beyond (in x's better direction)."""
    beyond = [p.y for p in points if (p.x >= at_x if x.higher_is_better else p.x <= at_x)]
    if not beyond:
        return -math.inf if y.higher_is_better else math.inf
    return max(beyond) if y.higher_is_better else min(beyond)


@settings(max_examples=200)
@given(point_sets(), views)
def test_step_function_never_exceeds_a_measured_point(points: list[AxisPoint], view: tuple) -> None:
    x, y = view
    steps = step_function(points, x, y)
    measured = {(p.x, p.y, p.id) for p in points}
    for c in steps.corners:
        assert (c.x, c.y, c.id) in measured  # every corner is a measured point
    by_id = {p.id: p for p in points}
    for s in steps.segments:
        # every segment's height is its point's measured y, and it ends at that point's x
        owner = by_id[s.point_id]
        assert s.y == owner.y and s.x_to == owner.x
    probes = sorted(
        {p.x for p in points} | {p.x + 0.5 for p in points} | {p.x - 0.5 for p in points}
    )
    for at_x in probes:
        value = steps.value_at(at_x)
        if value is None:
            continue
        best = _reachable(points, at_x, x, y)
        # the claim at x is achieved by a real point at x or beyond, and it is the best one
        assert value == best


@given(point_sets())
def test_measured_view_keeps_every_point_in_concurrency_order(points: list[AxisPoint]) -> None:
    x, y = AXES["concurrency"], AXES["tps"]
    steps = step_function(points, x, y, all_points=True)
    assert _ids(list(steps.corners)) == _ids(points)
    xs = [c.x for c in steps.corners]
    assert xs == sorted(xs)
    for s in steps.segments:
        assert s.x_from <= s.x_to


# ------------------------------------------------------------------ worked examples


def test_step_function_of_a_typical_sweep() -> None:
    # per-user TPS falls and TPS rises with concurrency; one point is dominated
    x, y = AXES["tps_per_user"], AXES["tps"]
    points = [
        AxisPoint(1, 100.0, 100.0),
        AxisPoint(2, 80.0, 300.0),
        AxisPoint(3, 40.0, 800.0),
        AxisPoint(4, 35.0, 700.0),  # worse on both than #3
        AxisPoint(5, 20.0, 1500.0),
    ]
    steps = step_function(points, x, y)
    assert [c.id for c in steps.corners] == [5, 3, 2, 1]
    assert [(s.x_from, s.x_to, s.y, s.point_id) for s in steps.segments] == [
        (20.0, 20.0, 1500.0, 5),
        (20.0, 40.0, 800.0, 3),
        (40.0, 80.0, 300.0, 2),
        (80.0, 100.0, 100.0, 1),
    ]
    assert steps.value_at(30.0) == 800.0  # #3 at 40 tok/s per user reaches it, nothing beyond
    assert steps.value_at(40.0) == 800.0
    assert steps.value_at(41.0) == 300.0
    assert steps.value_at(100.0) == 100.0
    assert steps.value_at(101.0) is None  # no claim beyond the last measured point
    assert steps.value_at(10.0) is None  # nor before the first


def test_lower_is_better_x_steps_run_from_worst_to_best() -> None:
    x, y = AXES["ttft_p99_ms"], AXES["qps"]
    points = [AxisPoint(1, 100.0, 10.0), AxisPoint(2, 200.0, 30.0), AxisPoint(3, 800.0, 50.0)]
    steps = step_function(points, x, y)
    assert [c.id for c in steps.corners] == [3, 2, 1]
    assert steps.value_at(500.0) == 30.0  # with TTFT p99 <= 500 ms, #2 gives 30 req/s
    assert steps.value_at(800.0) == 50.0


def test_identical_points_both_stay_on_the_frontier_and_draw_one_corner() -> None:
    x, y = AXES["tps_per_user"], AXES["tps"]
    points = [AxisPoint(1, 10.0, 10.0), AxisPoint(2, 10.0, 10.0)]
    assert _ids(pareto_set(points, x, y)) == [1, 2]
    assert [c.id for c in step_function(points, x, y).corners] == [1]


def test_empty_input_gives_an_empty_step_function() -> None:
    steps = step_function([], AXES["tps_per_user"], AXES["tps"])
    assert steps.corners == () and steps.segments == ()


def test_project_reports_points_missing_a_figure() -> None:
    x, y = AXES["tps_per_user"], AXES["tps"]
    placed, missing = pareto.project(
        [
            (1, {"tps_per_user_v1": 10.0, "tps": 5.0}),
            (2, {"tps": 5.0}),
            (3, {"tps_per_user_v1": None, "tps": 5.0}),
            (4, {"tps_per_user_v1": float("nan"), "tps": 5.0}),
            (5, {"tps_per_user_v1": "fast", "tps": 5.0}),
            (6, {"tps_per_user_v1": True, "tps": 5.0}),
        ],
        x,
        y,
    )
    assert [p.id for p in placed] == [1] and missing == [2, 3, 4, 5, 6]


def test_unknown_axis_names_the_field_and_the_valid_axes() -> None:
    with pytest.raises(pareto.UnknownAxis) as err:
        pareto.axis("speed", "x")
    assert isinstance(err.value, ValueError)
    assert err.value.field == "x"
    assert "'speed'" in str(err.value) and "tps_per_user" in str(err.value)


def test_registry_has_the_named_views() -> None:
    for x_name, y_name in pareto.VIEWS:
        assert x_name in AXES and y_name in AXES
    assert AXES["tps_per_user"].key == "tps_per_user_v1" and AXES["tps_per_user"].higher_is_better
    assert not AXES["ttft_p99_ms"].higher_is_better
