"""SloLimits: at least one limit; positive, finite maxima; only percentiles summaries carry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from orchestrator.errors import Invalid
from orchestrator.slo.schemas import SloLimits, SloProfileCreate
from orchestrator.slo.service import DEFAULT_DIR, parse_file


def error_of(doc: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(ValidationError) as info:
        SloProfileCreate.model_validate({"name": "p", "limits": doc})
    first = info.value.errors()[0]
    return ".".join(str(p) for p in first["loc"]), first["msg"]


def test_a_profile_with_no_limit_is_refused_naming_limits() -> None:
    where, msg = error_of({})
    assert where == "limits" and "at least one limit" in msg
    where, _ = error_of({"ttft_ms": None, "error_rate": None})
    assert where == "limits"


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"ttft_ms": {"percentile": 99, "max": -5}}, "limits.ttft_ms.max"),
        ({"ttft_ms": {"percentile": 99, "max": 0}}, "limits.ttft_ms.max"),
        ({"tpot_ms": {"percentile": 99, "max": float("inf")}}, "limits.tpot_ms.max"),
        ({"latency_ms": {"percentile": 98, "max": 10}}, "limits.latency_ms.percentile"),
        ({"ttft_ms": {"percentile": 100, "max": 10}}, "limits.ttft_ms.percentile"),
        ({"ttft_ms": {"max": 10}}, "limits.ttft_ms.percentile"),
        ({"error_rate": -0.1}, "limits.error_rate"),
        ({"error_rate": 1.5}, "limits.error_rate"),
        ({"ttft": {"percentile": 99, "max": 10}}, "limits.ttft"),
    ],
)
def test_bad_limits_name_the_field(doc: dict[str, Any], where: str) -> None:
    assert error_of(doc)[0] == where


def test_unknown_percentile_lists_the_known_ones() -> None:
    _, msg = error_of({"ttft_ms": {"percentile": 98, "max": 10}})
    assert "99.9" in msg and "50" in msg


def test_names_are_lower_case_slugs() -> None:
    for bad in ("", "Tight", "-x", "a" * 65, "a b"):
        with pytest.raises(ValidationError):
            SloProfileCreate.model_validate({"name": bad, "limits": {"error_rate": 0.1}})
    ok = SloProfileCreate.model_validate({"name": "a" * 64, "limits": {"error_rate": 0.1}})
    assert ok.limits.document() == {"error_rate": 0.1}


def test_the_shipped_profiles_parse() -> None:
    names = {parse_file(p).name for p in DEFAULT_DIR.glob("*.yaml")}
    assert {"interactive", "batch", "realtime"} <= names
    interactive = parse_file(DEFAULT_DIR / "interactive.yaml").limits
    assert interactive.ttft_ms is not None and interactive.ttft_ms.max == 1000
    assert interactive.ttft_ms.percentile == 99.0 and interactive.error_rate == 0.001


def test_a_bad_file_is_refused_naming_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("name: empty\nlimits: {}\n")
    with pytest.raises(Invalid) as info:
        parse_file(path)
    assert str(path) in info.value.message and info.value.field == "limits"


def test_limits_are_frozen_documents() -> None:
    limits = SloLimits.model_validate({"ttft_ms": {"percentile": 90, "max": 250}})
    assert limits.document() == {"ttft_ms": {"percentile": 90.0, "max": 250.0}}
