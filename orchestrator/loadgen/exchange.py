"""One request/response exchange: the state machine that turns bytes into a record.

Transports call `on_headers`, `on_body`, `on_message_complete`, `on_connection_lost` with
the arrival time of the bytes (taken when the socket read returned, before parsing). The
exchange frames SSE, decodes chunks, and decides the outcome. All classification happens
here, once, for every transport:

* status 429 → http_429; other 4xx (and unfollowed 3xx) → http_4xx; 5xx → http_5xx;
* bytes that are not SSE, a chunk that is not JSON of the expected shape, an event over
  the size limit → malformed_stream; an error object sent in band → http_5xx;
* a stream that ends (or whose connection drops) before any `finish_reason` → incomplete;
* a finished answer with no useful chunk → empty_response.

A stream counts as finished at `[DONE]` even if the server keeps the connection open: some
servers do, and the last byte of the answer has arrived.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import msgspec

from orchestrator.loadgen.openai import (
    chunk_decoder,
    completion_decoder,
    message_text,
    useful_text,
)
from orchestrator.loadgen.records import Failure, FinishReason
from orchestrator.loadgen.sse import SSEDecoder, SSEError

_DONE: Final = b"[DONE]"
_ERROR_BODY_LIMIT: Final = 64 * 1024


def classify_status(status: int) -> Failure:
    if 200 <= status < 300:
        return Failure.NONE
    if status == 429:
        return Failure.HTTP_429
    if status >= 500:
        return Failure.HTTP_5XX
    return Failure.HTTP_4XX


class Exchange:
    """Mutable per-request state; owned by one event loop, never shared."""

    __slots__ = (
        "_keep_text",
        "_sse",
        "body",
        "chunks",
        "detail",
        "end_ns",
        "events",
        "failure",
        "finish_reason",
        "finished",
        "first_ns",
        "first_server_ns",
        "first_text",
        "gaps",
        "hold",
        "issue_ns",
        "last_byte_ns",
        "last_useful_ns",
        "max_body_bytes",
        "notified",
        "on_done",
        "sample",
        "scheduled_ns",
        "status",
        "stream",
        "text_after_first",
        "usage_input",
        "usage_output",
    )

    def __init__(
        self,
        *,
        stream: bool,
        scheduled_ns: int,
        issue_ns: int,
        max_event_bytes: int,
        keep_text: bool,
        on_done: Callable[[Exchange], None] | None = None,
    ) -> None:
        self.stream = stream
        self.scheduled_ns = scheduled_ns
        self.issue_ns = issue_ns
        self.last_byte_ns = issue_ns
        self.status = 0
        self.failure = Failure.NONE
        self.detail = ""
        self.finished = False
        self.first_ns = -1
        self.first_server_ns = -1
        self.end_ns = -1
        self.last_useful_ns = -1
        self.gaps: list[int] = []
        self.chunks = 0
        self.events = 0
        self.finish_reason = FinishReason.NONE
        self.usage_output = -1
        self.usage_input = -1
        self._sse = SSEDecoder(max_event_bytes) if stream else None
        self.max_body_bytes = max_event_bytes
        self.body: list[bytes] = []
        self._keep_text = keep_text
        self.first_text = ""
        self.text_after_first: list[str] = []
        self.on_done = on_done  # called once, when finished and the transport is done with it
        self.sample = -1  # dataset index, for the record
        self.hold = False  # set by a transport while it still handles the connection
        self.notified = False

    # -- events from the transport -------------------------------------------------------

    def on_headers(self, status: int, t_ns: int) -> None:
        self.status = status
        self.last_byte_ns = t_ns
        failure = classify_status(status)
        if failure is not Failure.NONE:
            self.failure = failure
            self._sse = None  # the body is an error document, not a stream

    def on_body(self, data: bytes, t_ns: int) -> bool:
        """Consume body bytes; False when the connection must be dropped (bad stream)."""
        self.last_byte_ns = t_ns
        if self.finished:
            return True  # bytes after [DONE] (e.g. the chunked terminator)
        sse = self._sse
        if sse is None:
            self._collect(data)
            return True
        try:
            events = sse.feed(data)
        except SSEError as exc:
            self.fail(Failure.MALFORMED_STREAM, t_ns, str(exc))
            return False
        for payload in events:
            if payload == _DONE:
                self.events += 1
                self._finish_stream(t_ns)
                return True
            if not self._on_event(payload, t_ns):
                return False
        return True

    def on_message_complete(self, t_ns: int) -> None:
        if self.finished:
            return
        self.last_byte_ns = t_ns
        if self.failure is not Failure.NONE:
            self._finish(t_ns)
        elif self.stream:
            self._finish_stream(t_ns)
        else:
            self._finish_full(t_ns)

    def on_connection_lost(self, t_ns: int, reason: str = "") -> None:
        """The peer closed or reset the connection before the exchange finished."""
        if self.finished:
            return
        if self.failure is not Failure.NONE:
            self._finish(t_ns)
        elif self.stream and self.finish_reason is not FinishReason.NONE:
            self._finish_stream(t_ns)  # ended after its finish_reason: a complete answer
        else:
            self.fail(
                Failure.INCOMPLETE, t_ns, reason or "connection closed before the answer ended"
            )

    def fail(self, failure: Failure, t_ns: int, detail: str = "") -> None:
        if self.finished:
            return
        self.failure = failure
        if detail:
            self.detail = detail
        self._finish(t_ns)

    # -- internals -------------------------------------------------------------------------

    def _collect(self, data: bytes) -> None:
        size = sum(len(b) for b in self.body) + len(data)
        if size <= max(self.max_body_bytes, _ERROR_BODY_LIMIT):
            self.body.append(data)

    def _on_event(self, payload: bytes, t_ns: int) -> bool:
        self.events += 1
        try:
            chunk = chunk_decoder.decode(payload)
        except msgspec.DecodeError as exc:
            self.fail(Failure.MALFORMED_STREAM, t_ns, f"invalid chunk: {exc}: {payload[:120]!r}")
            return False
        if chunk.error is not None:
            self.fail(Failure.HTTP_5XX, t_ns, f"error in stream: {str(chunk.error)[:200]}")
            return False
        if chunk.usage is not None:
            if chunk.usage.completion_tokens is not None:
                self.usage_output = chunk.usage.completion_tokens
            if chunk.usage.prompt_tokens is not None:
                self.usage_input = chunk.usage.prompt_tokens
        if not chunk.choices:
            return True
        choice = chunk.choices[0]
        text = useful_text(choice)
        if text is not None:
            if self.first_ns < 0:
                self.first_ns = t_ns
                if chunk.rb_server_ns is not None:
                    self.first_server_ns = chunk.rb_server_ns
                if self._keep_text:
                    self.first_text = text
            else:
                self.gaps.append(t_ns - self.last_useful_ns)
                if self._keep_text:
                    self.text_after_first.append(text)
            self.last_useful_ns = t_ns
            self.chunks += 1
        if choice.finish_reason is not None:
            self.finish_reason = FinishReason.parse(choice.finish_reason)
        return True

    def _finish_stream(self, t_ns: int) -> None:
        if self.finish_reason is FinishReason.NONE:
            sse = self._sse
            if self.events == 0 and sse is not None and sse.bytes_seen > 0:
                self.failure = Failure.MALFORMED_STREAM
                self.detail = "the body is not an SSE stream"
            elif self.events == 0:
                self.failure = Failure.EMPTY_RESPONSE
                self.detail = "empty body"
            else:
                self.failure = Failure.INCOMPLETE
                self.detail = self.detail or "stream ended without a finish_reason"
        elif self.chunks == 0:
            self.failure = Failure.EMPTY_RESPONSE
            self.detail = "finished without any content, reasoning or tool-call delta"
        self._finish(t_ns)

    def _finish_full(self, t_ns: int) -> None:
        raw = b"".join(self.body)
        try:
            doc = completion_decoder.decode(raw)
        except msgspec.DecodeError as exc:
            self.fail(Failure.MALFORMED_STREAM, t_ns, f"invalid JSON response: {exc}")
            return
        if doc.error is not None or not doc.choices:
            self.fail(Failure.MALFORMED_STREAM, t_ns, "response has no choices")
            return
        choice = doc.choices[0]
        text = message_text(choice)
        if doc.usage is not None:
            self.usage_output = doc.usage.completion_tokens or -1
            self.usage_input = doc.usage.prompt_tokens or -1
        self.finish_reason = FinishReason.parse(choice.finish_reason)
        if text or (choice.message is not None and choice.message.tool_calls):
            self.chunks = 1
            if self._keep_text:
                self.first_text = text
        else:
            self.failure = Failure.EMPTY_RESPONSE
        self._finish(t_ns)

    def _finish(self, t_ns: int) -> None:
        self.finished = True
        self.end_ns = t_ns
        if self.failure is not Failure.NONE and not self.detail:
            self.detail = self._error_detail()
        if not self.hold:
            self.notify()

    def notify(self) -> None:
        """Hand the finished exchange to its owner, once."""
        if self.finished and not self.notified:
            self.notified = True
            if self.on_done is not None:
                self.on_done(self)

    def _error_detail(self) -> str:
        body = b"".join(self.body)[:300].decode("utf-8", "replace")
        prefix = f"HTTP {self.status}" if self.status else self.failure.label
        return f"{prefix}: {body}" if body else prefix
