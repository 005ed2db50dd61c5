"""Measurement math: exact distributions, Wilson intervals and the per-level summary.

Pure numpy functions, no I/O. `summarize_level` turns a level's per-request records into a
`LevelSummary`; `LevelSummary.to_result_summary` writes it in the MLCommons reference
client's `result_summary.json` layout.
"""

from orchestrator.stats.intervals import wilson_interval, z_value
from orchestrator.stats.jsontypes import JsonObject, JsonValue
from orchestrator.stats.percentiles import PERCENTILES, Distribution, distribution, percentile_key
from orchestrator.stats.summary import (
    ERROR_RATE_CONFIDENCE,
    FAILURE_CLASSES,
    FINISH_REASONS,
    RESULT_SUMMARY_VERSION,
    LevelSummary,
    summarize_level,
)

__all__ = [
    "ERROR_RATE_CONFIDENCE",
    "FAILURE_CLASSES",
    "FINISH_REASONS",
    "PERCENTILES",
    "RESULT_SUMMARY_VERSION",
    "Distribution",
    "JsonObject",
    "JsonValue",
    "LevelSummary",
    "distribution",
    "percentile_key",
    "summarize_level",
    "wilson_interval",
    "z_value",
]
