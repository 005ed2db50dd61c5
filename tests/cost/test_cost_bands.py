"""Cost bands, against numbers worked by hand."""

from __future__ import annotations

import pytest

from orchestrator.cost.bands import expected_attempts, hourly_band, token_band


def test_hourly_band_by_hand() -> None:
    # 3.6 USD/h, 10 successful requests/s, 100 output tokens each, f in 0.5–1.0:
    # per request = 3.6 / (3600 · 10 · f) = 1e-4 / f -> 1e-4 (f=1) .. 2e-4 (f=0.5)
    # per 1e6 output tokens = per request / 100 · 1e6 -> 1.0 .. 2.0
    band = hourly_band(
        price_per_hour=3.6,
        success_qps=10.0,
        mean_output_tokens=100.0,
        error_rate=0.0,
        delivered_fraction=(0.5, 1.0),
        currency="EUR",
    )
    assert band.basis == "hourly" and band.currency == "EUR" and not band.collapsed
    assert band.per_request_low == pytest.approx(1e-4)
    assert band.per_request_high == pytest.approx(2e-4)
    assert band.per_mtok_output_low == pytest.approx(1.0)
    assert band.per_mtok_output_high == pytest.approx(2.0)
    assert band.expected_attempts == 1.0 and band.delivered_fraction == (0.5, 1.0)


def test_hourly_default_band_high_end_at_the_low_fraction() -> None:
    # 2 USD/h at 30 successful req/s: 2 / (3600 · 30 · 0.9) = 2.0576e-5 .. / 0.6 = 3.0864e-5
    band = hourly_band(
        price_per_hour=2.0,
        success_qps=30.0,
        mean_output_tokens=None,
        error_rate=0.0,
        delivered_fraction=(0.6, 0.9),
        currency="USD",
    )
    assert band.per_request_low == pytest.approx(2 / 97200)
    assert band.per_request_high == pytest.approx(2 / 64800)
    assert band.per_mtok_output_low is None and band.per_mtok_output_high is None


def test_hourly_retries_are_in_the_success_rate() -> None:
    # 20 attempts/s at 25 % errors = 15 successes/s; the price spreads over successes only
    band = hourly_band(
        price_per_hour=36.0,
        success_qps=15.0,
        mean_output_tokens=10.0,
        error_rate=0.25,
        delivered_fraction=(1.0, 1.0),
        currency="USD",
    )
    assert band.per_request_low == pytest.approx(36 / 3600 / 15)
    assert band.expected_attempts == pytest.approx(4 / 3)


def test_token_band_by_hand_and_collapsed() -> None:
    # 200 in · 1.0 + 50 out · 4.0 = 400 per 1e6 requests -> 4e-4 per attempt;
    # 20 % errors: 1.25 attempts per success -> 5e-4; per 1e6 output tokens 5e-4 / 50 · 1e6 = 10
    band = token_band(
        input_price_per_mtok=1.0,
        output_price_per_mtok=4.0,
        mean_input_tokens=200.0,
        mean_output_tokens=50.0,
        error_rate=0.2,
        delivered_fraction=(0.6, 0.9),
        currency="USD",
    )
    assert band.basis == "tokens" and band.collapsed
    assert band.per_request_low == band.per_request_high == pytest.approx(5e-4)
    assert band.per_mtok_output_low == band.per_mtok_output_high == pytest.approx(10.0)
    assert band.expected_attempts == pytest.approx(1.25)
    assert "collapses" in band.note


def test_expected_attempts() -> None:
    assert expected_attempts(0.0) == 1.0
    assert expected_attempts(0.5) == 2.0
    assert expected_attempts(0.001) == pytest.approx(1.001001)
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="error rate"):
            expected_attempts(bad)


@pytest.mark.parametrize("field", ["input_price_per_mtok", "output_price_per_mtok"])
def test_negative_token_prices_are_refused_by_name(field: str) -> None:
    prices = {"input_price_per_mtok": 1.0, "output_price_per_mtok": 1.0, field: -1.0}
    with pytest.raises(ValueError, match=field):
        token_band(
            **prices,
            mean_input_tokens=1.0,
            mean_output_tokens=1.0,
            error_rate=0.0,
            delivered_fraction=(0.6, 0.9),
            currency="USD",
        )


def test_negative_hourly_price_and_bad_fractions_are_refused() -> None:
    common = {"success_qps": 1.0, "mean_output_tokens": 1.0, "error_rate": 0.0, "currency": "X"}
    with pytest.raises(ValueError, match="price_per_hour"):
        hourly_band(price_per_hour=-1.0, delivered_fraction=(0.6, 0.9), **common)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delivered fraction"):
        hourly_band(price_per_hour=1.0, delivered_fraction=(0.9, 0.6), **common)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="success_qps"):
        hourly_band(
            price_per_hour=1.0,
            success_qps=0.0,
            mean_output_tokens=1.0,
            error_rate=0.0,
            delivered_fraction=(0.6, 0.9),
            currency="USD",
        )
