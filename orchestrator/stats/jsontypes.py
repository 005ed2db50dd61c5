"""The JSON value type shared by the `to_json`/`to_result_summary` methods of this package.

Containers are `Mapping`/`Sequence` rather than `dict`/`list` so that a caller's ordinary
nested dicts (say a `run_config` of `dict[str, dict[str, int]]`) type-check as JSON without
annotations: `Mapping` is covariant in its values, `dict` is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonValue: TypeAlias = (
    bool | int | float | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"] | None
)
JsonObject: TypeAlias = dict[str, JsonValue]
