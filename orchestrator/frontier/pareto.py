"""Pareto sets and step functions of measured points: pure functions, no I/O.

A frontier is drawn from measured points only. `pareto_set` keeps the points that no other
point beats on both axes; `step_function` turns them into the corners and horizontal
segments of the curve "for every x, the best y achieved by a point at x or beyond" — the
only claim a measured point supports. Nothing is interpolated: every corner is a measured
point and every segment's height is a measured point's y.

Axes are named in `AXES`. Each reads one figure of a point (a key of its `metrics`, or its
concurrency) and says whether more is better. Concurrency is a *resource* axis: a system
that reaches the same throughput at a lower concurrency needs fewer users in flight, so for
dominance it counts as lower-is-better. The "TPS vs concurrency" view is the exception the
issue asks for: a measured curve, not a trade-off — its step function orders every measured
point by concurrency (see `step_function(..., all_points=True)` and `view_of`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AXES",
    "DEFAULT_X",
    "DEFAULT_Y",
    "VIEWS",
    "Axis",
    "AxisPoint",
    "Segment",
    "StepFunction",
    "UnknownAxis",
    "axis",
    "dominates",
    "dominators",
    "pareto_set",
    "project",
    "step_function",
]


@dataclass(frozen=True)
class Axis:
    """One selectable axis: which figure it reads, whether more is better, its label."""

    name: str
    key: str  # a key of Point.metrics, or "concurrency" for the point's own column
    higher_is_better: bool
    label: str  # with the unit, for tables and plots
    neutral: bool = False  # a load setting rather than a result (concurrency)


AXES: dict[str, Axis] = {
    a.name: a
    for a in (
        Axis("tps_per_user", "tps_per_user_v1", True, "per-user TPS (1000/TPOT p90, tok/s)"),
        Axis("tps_per_user_v07", "tps_per_user_v07", True, "per-user TPS v0.7 (TPS/conc, tok/s)"),
        Axis("tps", "tps", True, "TPS (output tok/s)"),
        Axis("qps", "qps", True, "QPS (req/s)"),
        Axis("success_qps", "success_qps", True, "successful QPS (req/s)"),
        Axis("ttft_p99_ms", "ttft_p99_ms", False, "TTFT p99 (ms)"),
        Axis("ttft_p90_ms", "ttft_p90_ms", False, "TTFT p90 (ms)"),
        Axis("tpot_p90_ms", "tpot_p90_ms", False, "TPOT p90 (ms)"),
        Axis("tpot_p99_ms", "tpot_p99_ms", False, "TPOT p99 (ms)"),
        Axis("latency_p99_ms", "latency_p99_ms", False, "latency p99 (ms)"),
        Axis("concurrency", "concurrency", False, "concurrency (requests in flight)", True),
    )
}
DEFAULT_X = "tps_per_user"
DEFAULT_Y = "tps"
# The views the issue names, as (x, y): the default trade-off, requests against first-token
# latency, and the measured throughput curve.
VIEWS: tuple[tuple[str, str], ...] = (
    (DEFAULT_X, DEFAULT_Y),
    ("ttft_p99_ms", "qps"),
    ("concurrency", "tps"),
)


class UnknownAxis(ValueError):
    """An axis name that `AXES` does not know; `field` is the query field it came from."""

    def __init__(self, name: str, field: str = "axis") -> None:
        valid = ", ".join(sorted(AXES))
        super().__init__(f"unknown axis {name!r} for {field}; valid axes: {valid}")
        self.name = name
        self.field = field


def axis(name: str, field: str = "axis") -> Axis:
    """The axis called `name`, else UnknownAxis naming it and listing the valid ones."""
    try:
        return AXES[name]
    except KeyError:
        raise UnknownAxis(name, field) from None


@dataclass(frozen=True)
class AxisPoint:
    """A point projected on two axes: its id and its two figures."""

    id: int
    x: float
    y: float


def _figure(point: Mapping[str, Any], a: Axis) -> float | None:
    value = point.get(a.key)
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def project(
    points: Iterable[tuple[int, Mapping[str, Any]]], x: Axis, y: Axis
) -> tuple[list[AxisPoint], list[int]]:
    """(projected points, ids of points missing a figure on either axis).

    `points` are (id, figures) pairs; a figure that is absent, None, not a number or not
    finite is "not measured" and the point is left out — and reported, never guessed.
    """
    kept: list[AxisPoint] = []
    missing: list[int] = []
    for pid, figures in points:
        fx, fy = _figure(figures, x), _figure(figures, y)
        if fx is None or fy is None:
            missing.append(pid)
        else:
            kept.append(AxisPoint(pid, fx, fy))
    return kept, missing


def _better_eq(a: float, b: float, higher: bool) -> bool:
    return a >= b if higher else a <= b


def dominates(a: AxisPoint, b: AxisPoint, x: Axis, y: Axis) -> bool:
    """True if `a` is at least as good as `b` on both axes and strictly better on one."""
    if not (_better_eq(a.x, b.x, x.higher_is_better) and _better_eq(a.y, b.y, y.higher_is_better)):
        return False
    return a.x != b.x or a.y != b.y


def pareto_set(points: Sequence[AxisPoint], x: Axis, y: Axis) -> list[AxisPoint]:
    """The points no other point dominates, ordered by x from worst to best.

    Two points with identical figures do not dominate each other: both stay (they are two
    measurements that say the same thing). The order is by (x, y, id), so the result does
    not depend on the order of `points`.
    """
    front = [p for p in points if not any(dominates(q, p, x, y) for q in points)]
    return sorted(front, key=lambda p: _order_key(p, x, y))


def _order_key(p: AxisPoint, x: Axis, y: Axis) -> tuple[float, float, int]:
    # worst x first; at equal x, worst y first — so the step runs left to right
    sx = p.x if x.higher_is_better else -p.x
    sy = p.y if y.higher_is_better else -p.y
    return (sx, sy, p.id)


def dominators(point: AxisPoint, front: Sequence[AxisPoint], x: Axis, y: Axis) -> list[int]:
    """Ids of the points of `front` that dominate `point` (empty if it is on the frontier)."""
    return sorted(q.id for q in front if dominates(q, point, x, y))


@dataclass(frozen=True)
class Segment:
    """A horizontal piece of a step function: y holds from x_from to x_to.

    `point_id` is the measured point whose y this is, and x_to is that point's x: the curve
    reads "at x or beyond (in x's better direction), y is achievable", so the segment is
    closed at its point (x_to) and open at x_from, where the previous, better-y corner is —
    except the first segment, which is just its corner.
    """

    x_from: float
    x_to: float
    y: float
    point_id: int


@dataclass(frozen=True)
class StepFunction:
    """Corners (measured points, drawing order) and the horizontal segments between them."""

    x: str
    y: str
    corners: tuple[AxisPoint, ...]
    segments: tuple[Segment, ...] = field(default_factory=tuple)

    def value_at(self, at_x: float) -> float | None:
        """The step's y at `at_x` (None outside the measured range); for tests and clients."""
        for s in self.segments:
            lo, hi = min(s.x_from, s.x_to), max(s.x_from, s.x_to)
            if lo <= at_x <= hi:
                return s.y
        return None


def step_function(
    points: Sequence[AxisPoint], x: Axis, y: Axis, *, all_points: bool = False
) -> StepFunction:
    """The step function of `points`: only measured corners, horizontal segments, no slopes.

    Default (a trade-off view): the corners are the Pareto set ordered from worst to best x.
    The segment ending at a corner c starts where the previous corner's x is (or at c.x for
    the first) and has c's y: at every x in it, c (at x or beyond, in the better direction)
    achieves that y — and no other point of the set does better, since it is Pareto. A
    client draws: horizontal from (x_from, y) to (x_to, y), then vertical to the next y.

    `all_points=True` (the "TPS vs concurrency" view, where x is a load setting): every
    measured point is a corner, ordered by x; each holds its own y from its x to the next
    point's x — the measured curve as a staircase, still without a slope between points.
    """
    if all_points:
        corners = sorted(points, key=lambda p: (p.x, p.y, p.id))
        segments = [
            Segment(c.x, corners[i + 1].x if i + 1 < len(corners) else c.x, c.y, c.id)
            for i, c in enumerate(corners)
        ]
        return StepFunction(x.name, y.name, tuple(corners), tuple(segments))
    front = pareto_set(points, x, y)
    # among identical figures keep one corner per (x, y): duplicates draw the same corner
    corners_list: list[AxisPoint] = []
    for p in front:
        if corners_list and (corners_list[-1].x, corners_list[-1].y) == (p.x, p.y):
            continue
        corners_list.append(p)
    segments = []
    previous_x: float | None = None
    for c in corners_list:
        start = c.x if previous_x is None else previous_x
        segments.append(Segment(start, c.x, c.y, c.id))
        previous_x = c.x
    return StepFunction(x.name, y.name, tuple(corners_list), tuple(segments))


def is_step_view(x: Axis, y: Axis) -> bool:
    """True when the view is a measured curve rather than a trade-off (x is a load setting)."""
    return x.neutral
