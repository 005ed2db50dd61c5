"""Hand-computed cases for `orchestrator.stats.percentiles`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from orchestrator.stats import PERCENTILES, distribution, percentile_key

# Copied from the reference client's result_summary.json (mlcommons/endpoints ea33275).
REFERENCE_PERCENTILE_KEYS = [
    "99.9", "99.0", "97.0", "95.0", "90.0", "80.0", "75.0", "50.0", "25.0", "10.0", "5.0", "1.0",
]  # fmt: skip
REFERENCE_DISTRIBUTION_KEYS = ["total", "min", "max", "median", "avg", "std_dev", "percentiles"]


def test_percentile_keys_are_the_reference_strings() -> None:
    assert [percentile_key(p) for p in PERCENTILES] == REFERENCE_PERCENTILE_KEYS
    assert percentile_key(99) == "99.0"
    assert percentile_key(99.9) == "99.9"
    assert percentile_key(1) == "1.0"


def test_one_to_ten_method_lower() -> None:
    dist = distribution(np.arange(1, 11, dtype=np.int64))
    assert dist is not None
    # method="lower": value at sorted index floor(p/100 * (n - 1)), n - 1 = 9, value = index + 1
    expected = {
        "99.9": 9.0,  # floor(8.991) = 8
        "99.0": 9.0,  # floor(8.91) = 8
        "97.0": 9.0,  # floor(8.73) = 8
        "95.0": 9.0,  # floor(8.55) = 8
        "90.0": 9.0,  # floor(8.1) = 8
        "80.0": 8.0,  # floor(7.2) = 7
        "75.0": 7.0,  # floor(6.75) = 6
        "50.0": 5.0,  # floor(4.5) = 4
        "25.0": 3.0,  # floor(2.25) = 2
        "10.0": 1.0,  # floor(0.9) = 0
        "5.0": 1.0,  # floor(0.45) = 0
        "1.0": 1.0,  # floor(0.09) = 0
    }
    assert dist.percentiles == expected
    assert list(dist.percentiles) == REFERENCE_PERCENTILE_KEYS
    assert dist.n == 10
    assert dist.total == 55 and type(dist.total) is int  # 1 + ... + 10
    assert dist.min == 1 and type(dist.min) is int
    assert dist.max == 10 and type(dist.max) is int
    assert dist.median == 5.0 and type(dist.median) is float  # = percentile 50, lower
    assert dist.avg == 5.5  # 55 / 10
    # population variance of 1..n is (n² − 1) / 12 = 99 / 12 = 8.25
    assert dist.std_dev == pytest.approx(math.sqrt(8.25), rel=1e-15)


def test_three_values_lower_never_reaches_the_max() -> None:
    dist = distribution([100, 200, 300])
    assert dist is not None
    # n - 1 = 2: p99.9 -> floor(1.998) = 1 -> 200; only p100 would give 300
    assert dist.percentiles["99.9"] == 200.0
    assert dist.percentiles["50.0"] == 200.0  # floor(1.0) = 1
    assert dist.percentiles["25.0"] == 100.0  # floor(0.5) = 0
    assert dist.max == 300


def test_unsorted_input_and_a_single_value() -> None:
    dist = distribution([7, 3, 5])
    assert dist is not None
    assert (dist.min, dist.median, dist.max) == (3, 5.0, 7)
    single = distribution([42])
    assert single is not None
    assert set(single.percentiles.values()) == {42.0}
    assert single.std_dev == 0.0


def test_float_input_keeps_float_totals() -> None:
    dist = distribution(np.array([0.5, 0.25, 1.25]))
    assert dist is not None
    assert dist.total == 2.0 and type(dist.total) is float
    assert dist.min == 0.25 and type(dist.min) is float
    assert dist.avg == pytest.approx(2.0 / 3.0)
    assert dist.median == 0.5


def test_constant_series_has_exactly_zero_std() -> None:
    # a mean computed as sum / n need not equal 0.1 exactly; shifting by the median avoids that
    dist = distribution(np.full(7, 0.1))
    assert dist is not None
    assert dist.std_dev == 0.0


def test_large_ns_offsets_keep_exact_integer_total() -> None:
    values = np.array([2**60, 2**60 + 1, 2**60 + 3], dtype=np.int64)
    dist = distribution(values)
    assert dist is not None
    assert dist.total == 3 * 2**60 + 4  # exact, beyond float64 precision


def test_empty_is_none() -> None:
    assert distribution([]) is None
    assert distribution(np.array([], dtype=np.int64)) is None


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError):
        distribution([1.0, math.nan])
    with pytest.raises(ValueError):
        distribution([1.0, math.inf])
    with pytest.raises(TypeError):
        distribution(np.array(["a", "b"]))


def test_to_json_layout() -> None:
    dist = distribution([10, 20, 30, 40])
    assert dist is not None
    obj = dist.to_json()
    assert list(obj) == REFERENCE_DISTRIBUTION_KEYS
    text = json.dumps(obj, allow_nan=False)
    # integer input: total/min/max serialize as integers, the rest as floats, as the reference
    assert '"total": 100' in text and '"min": 10' in text and '"max": 40' in text
    assert '"median": 20.0' in text  # n - 1 = 3, floor(1.5) = 1
    assert '"50.0": 20.0' in text
