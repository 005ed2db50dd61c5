"""Credentials never leave a run's files: the interop readers and writers pass every
configuration document they keep or emit (an imported `config.yaml`, a server config, an
exported `config.yaml` or `result_summary.json`) through `redact`, which replaces api keys,
passwords and every value of a `headers` mapping by "<redacted>".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SECRET_KEYS", "redact", "redact_mapping"]

SECRET_KEYS: Final = frozenset({"api_key", "apikey", "authorization", "password", "secret"})


def redact(doc: Any) -> Any:
    """`doc` with credentials (api keys, authorization headers, ...) replaced by "<redacted>"."""
    if isinstance(doc, Mapping):
        out: dict[str, Any] = {}
        for key, value in doc.items():
            name = str(key).lower()
            if name in SECRET_KEYS and value not in (None, ""):
                out[key] = "<redacted>"
            elif name == "headers" and isinstance(value, Mapping):
                out[key] = {k: "<redacted>" for k in value}
            else:
                out[key] = redact(value)
        return out
    if isinstance(doc, list):
        return [redact(v) for v in doc]
    return doc


def redact_mapping(doc: Mapping[str, Any]) -> dict[str, Any]:
    """`redact` of an object, typed as one."""
    out = redact(doc)
    assert isinstance(out, dict)
    return out
