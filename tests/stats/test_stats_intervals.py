"""Wilson interval against known values, and its invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.stats import wilson_interval, z_value


@pytest.mark.parametrize(
    ("failures", "n", "expected"),
    [
        # p = 0: lower = 0, upper = (z²/n) / (1 + z²/n) = 0.38415 / 1.38415 = 0.2775
        (0, 10, (0.0, 0.2775)),
        # p = 0.5: center 0.5, half = z·sqrt(0.025 + z²/400) / 1.38415 = 0.2634
        (5, 10, (0.2366, 0.7634)),
        (10, 10, (0.7225, 1.0)),
        # n = 6: half = 1.96·sqrt(0.25/6 + 3.8415/144) / 1.64024 = 0.3124
        (3, 6, (0.1876, 0.8124)),
        (1, 100, (0.0018, 0.0545)),
        (0, 200, (0.0, 0.0188)),
    ],
)
def test_known_values(failures: int, n: int, expected: tuple[float, float]) -> None:
    lower, upper = wilson_interval(failures, n)
    assert (round(lower, 4), round(upper, 4)) == expected


def test_edges_are_exact() -> None:
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_z_values() -> None:
    assert z_value(0.95) == 1.959963984540054
    assert z_value(0.99) == pytest.approx(2.5758293035489, rel=1e-12)
    assert z_value(0.90) == pytest.approx(1.6448536269514715, rel=1e-12)


@pytest.mark.parametrize(("failures", "n"), [(-1, 10), (11, 10), (0, -1), (1, 0)])
def test_bad_counts(failures: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(failures, n)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5])
def test_bad_confidence(confidence: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(1, 10, confidence)


@given(st.integers(1, 10**7).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_bounds_contain_the_estimate(case: tuple[int, int]) -> None:
    failures, n = case
    lower, upper = wilson_interval(failures, n)
    assert 0.0 <= lower <= failures / n <= upper <= 1.0


@given(
    st.integers(1, 10**5).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.floats(0.5, 0.99),
    st.floats(0.5, 0.99),
)
def test_more_confidence_is_wider(case: tuple[int, int], c1: float, c2: float) -> None:
    failures, n = case
    low_c, high_c = sorted((c1, c2))
    narrow = wilson_interval(failures, n, low_c)
    wide = wilson_interval(failures, n, high_c)
    assert wide[0] <= narrow[0] + 1e-12
    assert wide[1] >= narrow[1] - 1e-12
