"""Region bounds and coverage (MLPerf Endpoints rules §5), pure: hand-computed bounds, the
banker's rounding, the exact margin, and a sweep against 50-digit arithmetic."""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Decimal, localcontext

import pytest

from orchestrator.programme import RegionRules
from orchestrator.review.regions import (
    Bounds,
    coverage,
    half_even,
    margin_end,
    regions,
)

MLPERF = RegionRules()  # 7–32 points, margin 10 %, required


def spans(c_min: int, c_max: int) -> tuple[str, ...]:
    r = regions(c_min, c_max)
    return tuple(str(b) for b in (r.ultra_low, r.low, r.med, r.high, r.margin))


@pytest.mark.parametrize(
    ("c_min", "c_max", "expected"),
    [
        # I = log2(1023)/3: 2^I = 1023^(1/3) = 10.0766 → round(11.08) = 11;
        # 2^(2I) = 101.54 → round(102.54) = 103; margin ceil(1126.4) = 1127
        (1, 1024, ("1–1", "2–11", "12–103", "104–1024", "1025–1127")),
        # I = log2(512)/3 = 3 exactly: 8 + 8 = 16, 8 + 64 = 72; margin 1.1 · 520 = 572
        (8, 520, ("1–8", "9–16", "17–72", "73–520", "521–572")),
        # the official checker's example (low 17–26) and Appendix B's Med end 117
        (16, 1024, ("1–16", "17–26", "27–117", "118–1024", "1025–1127")),
        # the demo sweep: 63^(1/3) = 3.979 → 5; 63^(2/3) = 15.83 → 17; ceil(70.4) = 71
        (1, 64, ("1–1", "2–5", "6–17", "18–64", "65–71")),
        # 1 + 8 = 9 and 1 + 64 = 65 exactly (C_max − C_min = 512)
        (1, 513, ("1–1", "2–9", "10–65", "66–513", "514–565")),
    ],
)
def test_hand_computed_bounds(c_min: int, c_max: int, expected: tuple[str, ...]) -> None:
    assert spans(c_min, c_max) == expected


def test_rounding_collisions_give_zero_width_regions_covered_at_their_boundary() -> None:
    # C_max − C_min = 1: 2^I = 1, so Low ends at round(33) = 33 and Med at round(33) = 33
    r = regions(32, 33)
    assert (r.low, r.med, r.high) == (Bounds(33, 33), Bounds(34, 33), Bounds(34, 33))
    assert r.med.zero_width and r.med.covered_by(33) and not r.med.covered_by(34)
    found = coverage([1, 2, 4, 8, 16, 32, 33], 33, MLPERF)
    assert all(f.passed for f in found if f.check == "regions.coverage"), found


@pytest.mark.parametrize(
    ("value", "rounded"),
    [(0.5, 0), (1.5, 2), (2.5, 2), (3.5, 4), (4.5, 4), (5.5, 6), (10.5, 10), (11.5, 12)],
)
def test_half_even_is_bankers_rounding(value: float, rounded: int) -> None:
    assert half_even(value) == rounded
    # and not what "round half up" would give on the even cases
    if int(value) % 2 == 0:
        assert half_even(value) != math.floor(value + 0.5)


def test_a_boundary_on_a_half_rounds_to_even(monkeypatch: pytest.MonkeyPatch) -> None:
    """Integer C_min/C_max never land exactly on a half (see the module docstring), so a
    half is forced through the formula: with I = −1, 2^I = 0.5 exactly, so the Low end is
    round(C_min + 0.5): 2.5 → 2 and 3.5 → 4 (half up would say 3 and 4)."""
    import orchestrator.review.regions as module

    monkeypatch.setattr(module, "log2", lambda _x: -3.0)
    assert regions(2, 40).low.end == 2
    assert regions(3, 40).low.end == 4
    assert regions(4, 40).low.end == 4  # 4.5 → 4
    assert regions(5, 40).low.end == 6  # 5.5 → 6


def test_the_margin_is_exact_where_floating_point_is_not() -> None:
    assert 1.1 * 50 > 55  # 55.00000000000001: a naive ceil says 56
    assert margin_end(50, 0.10) == 55
    assert margin_end(520, 0.10) == 572
    assert margin_end(1024, 0.10) == 1127
    assert margin_end(64, 0.0) == 64


def _exact(c_min: int, c_max: int) -> tuple[int, int, int]:
    """Low end, Med end and margin end in 50-digit decimal arithmetic."""
    with localcontext() as ctx:
        ctx.prec = 50
        d = Decimal(c_max - c_min)
        cube_root = (d.ln() / 3).exp()
        low = (c_min + cube_root).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
        med = (c_min + cube_root * cube_root).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
        margin = (c_max * Decimal("1.1")).quantize(Decimal(1), rounding=ROUND_CEILING)
    return int(low), int(med), int(margin)


def test_double_precision_matches_exact_arithmetic_over_a_sweep() -> None:
    for c_min in (1, 2, 3, 7, 8, 15, 16, 31, 32):
        for c_max in [*range(33, 300), *range(300, 5000, 37), 8192, 22528, 100_000]:
            r = regions(c_min, c_max)
            assert (r.low.end, r.med.end, r.margin.end) == _exact(c_min, c_max), (c_min, c_max)


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="C_min must be in 1–32"):
        regions(33, 1024)
    with pytest.raises(ValueError, match="C_max must be above 32"):
        regions(1, 32)


def test_region_of_classifies_every_level() -> None:
    r = regions(1, 64)
    assert [r.region_of(c) for c in (1, 2, 5, 6, 17, 18, 64, 65, 71, 72)] == [
        "ultra_low",
        "low",
        "low",
        "med",
        "med",
        "high",
        "high",
        "margin",
        "margin",
        None,
    ]


# ------------------------------------------------------------------------------ coverage


def failed_checks(found: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(f.check, f.severity) for f in found if not f.passed]


def test_a_full_curve_passes() -> None:
    found = coverage([1, 2, 4, 8, 16, 32, 64, 70], 64, MLPERF)
    assert failed_checks(found) == []
    count = next(f for f in found if f.check == "regions.count")
    assert "8 distinct levels" in count.message


def test_the_lowest_level_must_be_ultra_low() -> None:
    found = coverage([33, 40, 64, 100, 200, 400, 800], 1024, MLPERF)
    bad = [f for f in found if not f.passed]
    assert bad[0].check == "regions.coverage"
    assert "Ultra-Low (1–32) has no point: the lowest level is 33" in bad[0].message


def test_a_level_above_the_margin_is_always_an_error_and_named() -> None:
    lenient = RegionRules(required=False, min_points=3)
    found = coverage([1, 4, 16, 64, 72], 64, lenient)
    bad = [f for f in found if not f.passed]
    assert [(f.check, f.severity, f.level) for f in bad] == [("regions.range", "error", 72)]


def test_counts_use_distinct_levels_and_the_cap() -> None:
    few = coverage([1, 1, 4, 16, 64, 64], 64, MLPERF)
    assert ("regions.count", "error") in failed_checks(few)
    count = next(f for f in few if f.check == "regions.count")
    assert "4 distinct level(s)" in count.message
    many = coverage(range(1, 65), 64, MLPERF)
    count = next(f for f in many if f.check == "regions.count")
    assert (
        not count.passed and "64 distinct levels" in count.message and "at most 32" in count.message
    )


def test_severity_follows_required() -> None:
    assert failed_checks(coverage([1, 2, 4, 8, 16, 32, 40], 64, MLPERF)) == []  # 40: High
    strict = coverage([1, 2, 4, 8, 10, 12, 16], 64, MLPERF)
    lenient = coverage([1, 2, 4, 8, 10, 12, 16], 64, RegionRules(required=False))
    assert failed_checks(strict) == [("regions.coverage", "error")]
    assert failed_checks(lenient) == [("regions.coverage", "warning")]


def test_an_undeclared_maximum_is_the_highest_level_with_a_warning() -> None:
    found = coverage([1, 2, 4, 8, 16, 32, 64], None, MLPERF)
    assert failed_checks(found) == [("regions.declared_max", "warning")]


def test_a_maximum_within_ultra_low_cannot_define_regions() -> None:
    found = coverage([1, 2, 4, 8, 16, 32], None, MLPERF)
    bad = [f for f in found if not f.passed and f.severity == "error"]
    assert len(bad) == 1 and "C_max 32 is not above 32" in bad[0].message
    assert coverage([], 64, MLPERF)[0].message == "the curve has no points."
