"""Incremental Server-Sent Events framing over raw bytes.

Written to the WHATWG definition rather than borrowed: lines end on CR, LF or CRLF and on
nothing else, so a U+2028 LINE SEPARATOR (or NEL, or FF) inside a JSON string never splits
an event — `str.splitlines` would. We work on bytes, which also keeps multi-byte UTF-8
sequences that straddle two reads intact. Comment lines (`: ping`) and fields other than
`data` are skipped; an event is dispatched on a blank line and carries its `data` lines
joined by LF. A CR that ends one read may be the first half of a CRLF whose LF arrives in
the next read; that LF must not be taken for a blank line.

Events larger than `max_event_bytes` raise `SSEError`, so a server that streams 10 MB
without a line break becomes a classified failure instead of unbounded memory.
"""

from __future__ import annotations

__all__ = ["SSEDecoder", "SSEError"]


class SSEError(ValueError):
    """The byte stream cannot be framed as SSE within the limits."""


class SSEDecoder:
    """Feed bytes as they arrive; get back the `data` payload of each complete event."""

    __slots__ = ("_data", "_data_bytes", "_max_event_bytes", "_pending", "_skip_lf", "bytes_seen")

    def __init__(self, max_event_bytes: int = 4 * 1024 * 1024) -> None:
        self._max_event_bytes = max_event_bytes
        self._pending = b""  # an incomplete line
        self._data: list[bytes] = []  # data lines of the event being built
        self._data_bytes = 0
        self._skip_lf = False  # previous read ended in CR: a leading LF belongs to it
        self.bytes_seen = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """Consume `chunk`; return the payloads of the events it completed (maybe none)."""
        self.bytes_seen += len(chunk)
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._pending + chunk if self._pending else chunk
        if b"\r" in buf:
            if buf.endswith(b"\r"):
                self._skip_lf = True
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._pending = lines.pop()
        if len(self._pending) + self._data_bytes > self._max_event_bytes:
            raise SSEError(f"SSE event exceeds {self._max_event_bytes} bytes")
        events: list[bytes] = []
        for line in lines:
            if not line:
                if self._data:
                    data = self._data
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    self._data = []
                    self._data_bytes = 0
                continue
            if line[:5] == b"data:":
                value = line[6:] if line[5:6] == b" " else line[5:]
                self._data.append(value)
                self._data_bytes += len(value)
                if self._data_bytes > self._max_event_bytes:
                    raise SSEError(f"SSE event exceeds {self._max_event_bytes} bytes")
            elif line == b"data":
                self._data.append(b"")
            # Comments (":..."), event:, id:, retry: and unknown fields carry nothing we use.
        return events

    def flush(self) -> list[bytes]:
        """End of stream: an event not closed by a blank line is discarded, per the spec."""
        self._pending = b""
        self._data = []
        self._data_bytes = 0
        return []

    @property
    def has_partial_event(self) -> bool:
        return bool(self._data or self._pending)
