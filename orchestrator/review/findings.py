"""Findings: what the automated checker says, and how a stored finding is read back.

Each finding has a stable id (`duration.min`), a severity — "error" blocks acceptance,
"warning" informs — whether it passed, and a sentence a submitter understands, with the
figures and the rule. Passed findings are kept too: an operator sees what was checked, not
only what failed. A passed finding carries the severity it would have had, had it failed.
Findings are stored with the submission as dicts (`Finding.as_dict`); `stored_blocking`,
`blocking_checks` and `summary_of` read them back. The small helpers at the end state
figures in the checks' sentences.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from orchestrator.stats.jsontypes import JsonValue
from orchestrator.submissions.schemas import summarise

__all__ = [
    "ERROR",
    "WARNING",
    "Finding",
    "blocking",
    "blocking_checks",
    "close",
    "figure",
    "num",
    "pct",
    "stored_blocking",
    "summary_of",
]

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str  # "error" blocks acceptance | "warning" informs
    passed: bool
    message: str
    point_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that stop acceptance: failed, with severity error."""
    return [f for f in findings if not f.passed and f.severity == ERROR]


def stored_blocking(findings: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """The blocking findings among stored ones (dicts written by `Finding.as_dict`)."""
    names = {f.name for f in dataclasses.fields(Finding)}
    parsed = []
    for doc in findings:
        if not isinstance(doc, Mapping):
            continue
        try:
            parsed.append(Finding(**{k: v for k, v in doc.items() if k in names}))
        except TypeError:  # a stored finding of another shape: not judged, not blocking
            continue
    return blocking(parsed)


def blocking_checks(findings: Sequence[Mapping[str, Any]], point_id: int) -> list[str]:
    """Ids of the blocking findings that stop `point_id` being accepted: its own ones and
    those about the whole submission (point_id None)."""
    return sorted(
        {f.check for f in stored_blocking(findings) if f.point_id is None or f.point_id == point_id}
    )


def summary_of(findings: Sequence[Mapping[str, Any]]) -> dict[str, JsonValue]:
    return dict(summarise(findings))


# ------------------------------------------------------------------- figures in sentences


def figure(metrics: Mapping[str, Any], key: str) -> float | None:
    """A finite number from `metrics`, or None: "not measured"."""
    value = metrics.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def num(value: float) -> str:
    """A figure for a sentence: 212, 2.5, 0.0123, 1200."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def pct(fraction: float) -> str:
    return f"{fraction * 100:.2f} %" if abs(fraction) < 0.1 else f"{fraction * 100:.1f} %"


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)
