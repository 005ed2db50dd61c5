"""Per-request records: one row per measured request, stored column by column.

Every number the project reports is derived from these columns, so their meaning is fixed
here. Times are CLOCK_MONOTONIC nanoseconds taken in the worker process that owns the
socket, at the moment bytes arrived (before any decoding). A value of -1 means "did not
happen" (no useful chunk, no usage reported, fewer than two chunks for a gap, ...).

Columns live in numpy arrays so that a level of a million requests costs tens of MB, is
merged across worker processes by concatenation and is written as one compressed `.npz`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import numpy.typing as npt


class Failure(enum.IntEnum):
    """Why a request failed. 0 is success; the names are the classes of DESIGN §5."""

    NONE = 0
    CONNECT = 1  # could not open a connection (refused, unreachable, EADDRNOTAVAIL, TLS)
    TIMEOUT = 2  # connect or total timeout, or still in flight at the drain deadline
    STALL = 3  # no byte for stall_timeout_s
    HTTP_4XX = 4
    HTTP_429 = 5
    HTTP_5XX = 6
    MALFORMED_STREAM = 7  # not SSE, invalid JSON, an event over the size limit, bad HTTP
    EMPTY_RESPONSE = 8  # a complete answer that carried no useful content
    INCOMPLETE = 9  # stream ended (or connection dropped) before a finish_reason

    @property
    def label(self) -> str:
        return self.name.lower()


class FinishReason(enum.IntEnum):
    """OpenAI `finish_reason`, as counted in `finish_reason_counts` of result_summary.json."""

    NONE = 0
    STOP = 1
    LENGTH = 2
    TOOL_CALLS = 3
    CONTENT_FILTER = 4
    FUNCTION_CALL = 5
    OTHER = 6

    @classmethod
    def parse(cls, value: str | None) -> FinishReason:
        if value is None:
            return cls.NONE
        return _FINISH_BY_NAME.get(value, cls.OTHER)

    @property
    def label(self) -> str:
        return self.name.lower()


_FINISH_BY_NAME = {m.name.lower(): m for m in FinishReason if m is not FinishReason.NONE}


class TokenSource(enum.IntEnum):
    """Where output token counts came from (DESIGN §5, in order of preference)."""

    TOKENIZER = 1
    USAGE = 2
    CHUNKS = 3

    @property
    def label(self) -> str:
        return self.name.lower()


I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
I16 = npt.NDArray[np.int16]
I8 = npt.NDArray[np.int8]

# Column name -> dtype. The order is the on-disk order.
COLUMNS: dict[str, type[np.generic]] = {
    "worker": np.int16,  # index of the client process that measured the request
    "scheduled_ns": np.int64,  # when the load pattern wanted it sent (= issue_ns, closed loop)
    "issue_ns": np.int64,  # just before the request bytes were written
    "first_ns": np.int64,  # first useful chunk (TTFT end); -1 if none
    "first_server_ns": np.int64,  # the server's stamp of that chunk, if it sends one; else -1
    "end_ns": np.int64,  # last byte of the response, or the moment the failure was known
    "output_tokens": np.int32,  # -1 unknown
    "tokens_after_first": np.int32,  # output tokens after the first useful chunk; -1 unknown
    "input_tokens": np.int32,  # -1 unknown
    "chunks": np.int32,  # SSE data events received (excluding [DONE])
    "max_gap_ns": np.int64,  # largest gap between consecutive chunks; -1 if < 2 chunks
    "p99_gap_ns": np.int64,  # p99 (method lower) of those gaps; -1 if < 2 chunks
    "failure": np.int8,  # Failure
    "http_status": np.int16,  # 0 when no status line was received
    "finish_reason": np.int8,  # FinishReason
}


@dataclass(slots=True)
class RequestRecords:
    """Columns of per-request records; all arrays have the same length."""

    worker: I16
    scheduled_ns: I64
    issue_ns: I64
    first_ns: I64
    first_server_ns: I64
    end_ns: I64
    output_tokens: I32
    tokens_after_first: I32
    input_tokens: I32
    chunks: I32
    max_gap_ns: I64
    p99_gap_ns: I64
    failure: I8
    http_status: I16
    finish_reason: I8

    def __len__(self) -> int:
        return int(self.issue_ns.shape[0])

    @classmethod
    def empty(cls, n: int = 0) -> RequestRecords:
        return cls(**{name: np.full(n, -1, dtype=dt) for name, dt in COLUMNS.items()})

    @classmethod
    def from_columns(cls, columns: Mapping[str, npt.ArrayLike]) -> RequestRecords:
        missing = set(COLUMNS) - set(columns)
        if missing:
            raise ValueError(f"records lack columns: {sorted(missing)}")
        arrays = {name: np.asarray(columns[name], dtype=dt) for name, dt in COLUMNS.items()}
        lengths = {a.shape[0] for a in arrays.values()}
        if len(lengths) > 1:
            raise ValueError(f"record columns differ in length: {sorted(lengths)}")
        return cls(**arrays)

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def concat(cls, parts: list[RequestRecords]) -> RequestRecords:
        if not parts:
            return cls.empty()
        return cls(**{name: np.concatenate([getattr(p, name) for p in parts]) for name in COLUMNS})

    def select(self, mask: npt.NDArray[np.bool_]) -> RequestRecords:
        return RequestRecords(**{name: getattr(self, name)[mask] for name in COLUMNS})

    @property
    def succeeded(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.failure == Failure.NONE, dtype=np.bool_)

    def save(self, path: Path) -> None:
        """Write a compressed `.npz` (one array per column)."""
        with path.open("wb") as fh:
            np.savez_compressed(fh, allow_pickle=False, **self.columns())

    @classmethod
    def load(cls, path: Path) -> RequestRecords:
        with np.load(path) as data:
            return cls.from_columns({name: data[name] for name in data.files})
