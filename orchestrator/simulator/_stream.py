"""One response in flight: turns "n tokens generated so far" into bytes on the wire.

The timing models (`_engines.py`) only count tokens; this class owns everything about the
response's shape. Streamed: the HTTP head and, for chat, the role-only chunk go out as soon
as the request is accepted (so a client that counts role chunks as first tokens is caught);
tokens are grouped `tokens_per_chunk` to an event and an event is written when its last
token is generated; reasoning tokens come first as `reasoning_content` (an event spanning
the boundary carries both fields, as vLLM does); the event with the last token carries the
finish reason; then the optional usage event, `[DONE]` and the end of the chunked body.
Everything due at one instant goes out in one `transport.write` (at zero latency a whole
answer is one write), and the optional stamp is taken once per write, at write time.
Not streamed: one Content-Length JSON body when the last token is generated.

Mid-stream faults fire before event `fault_chunk`, which is drawn so that at least one
content event has gone out and at least one has not (when the answer has two or more):
a stall holds the output for `stall_s` with the connection open, then flushes what was
generated meanwhile and carries on; a malformed event is inserted and the stream carries on
(the rest is valid, so only the client's parser is tested); a drop closes the connection.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Callable
from typing import Final, Protocol

from orchestrator.simulator._wire import (
    DONE_EVENT,
    LAST_HTTP_CHUNK,
    MALFORMED_EVENT,
    STREAM_HEAD_CLOSE,
    STREAM_HEAD_KEEP_ALIVE,
    Api,
    ChunkWriter,
    completion_body,
    http_chunk,
    json_response,
)

_MALFORMED_BODY: Final = b"{not json"


class Fault(enum.Enum):
    NONE = "none"
    STALL = "stall"
    MALFORMED = "malformed"
    DROP = "drop"


class ResponseSink(Protocol):
    """The connection side of a response (implemented by `_http.Connection`)."""

    def write(self, data: bytes) -> None: ...

    def finish_response(self) -> None: ...

    def drop_connection(self) -> None: ...


class TokenStream:
    """The response to one generation request; driven by `advance(tokens_generated)`."""

    __slots__ = (
        "_chunk_writer",
        "_chunks_sent",
        "_chunks_total",
        "_fault",
        "_fault_chunk",
        "_finish_reason",
        "_head_sent",
        "_held",
        "_include_usage",
        "_keep_alive",
        "_loop",
        "_model",
        "_received_ns",
        "_release_handle",
        "_request_id",
        "_sink",
        "_stall_s",
        "_stamp",
        "_streamed",
        "_truth_ttft_ns",
        "api",
        "content_tokens",
        "created",
        "done",
        "generated",
        "on_cancel",
        "prompt_tokens",
        "reasoning_tokens",
        "tokens_per_chunk",
        "total_tokens",
    )

    def __init__(
        self,
        *,
        sink: ResponseSink,
        loop: asyncio.AbstractEventLoop,
        api: Api,
        streamed: bool,
        include_usage: bool,
        keep_alive: bool,
        request_id: str,
        created: int,
        model: str,
        prompt_tokens: int,
        reasoning_tokens: int,
        content_tokens: int,
        finish_reason: str,
        tokens_per_chunk: int,
        stamp: bool,
        fault: Fault,
        fault_position: float,
        stall_s: float,
        truth_ttft_ns: list[int] | None = None,
    ) -> None:
        self._sink = sink
        # Benchmarks compare a client's TTFT with when the first token really left: the time
        # from reading the request to writing its first content event, per answer.
        self._truth_ttft_ns = truth_ttft_ns
        self._received_ns = time.monotonic_ns() if truth_ttft_ns is not None else 0
        self._loop = loop
        self.api: Api = api
        self._streamed = streamed
        self._include_usage = include_usage
        self._keep_alive = keep_alive
        self._request_id = request_id
        self.created = created
        self._model = model
        self.prompt_tokens = prompt_tokens
        self.reasoning_tokens = reasoning_tokens
        self.content_tokens = content_tokens
        self.total_tokens = reasoning_tokens + content_tokens
        self._finish_reason = finish_reason
        self.tokens_per_chunk = tokens_per_chunk if streamed else self.total_tokens
        self._stamp = stamp
        self._chunks_total = -(-self.total_tokens // self.tokens_per_chunk)
        self._fault = fault
        # fault_position ∈ [0, 1) picks the event before which a mid-stream fault fires.
        n = self._chunks_total
        self._fault_chunk = 1 + int(fault_position * (n - 1)) if streamed and n >= 2 else 0
        self._stall_s = stall_s
        self._chunk_writer = ChunkWriter(api, request_id, created, model) if streamed else None
        self._head_sent = False
        self._chunks_sent = 0
        self._held = False
        self._release_handle: asyncio.TimerHandle | None = None
        self.generated = 0
        self.done = False  # nothing more will be written (finished, dropped or cancelled)
        self.on_cancel: Callable[[], None] | None = None

    def next_trigger_token(self, generated: int) -> int:
        """Index of the token whose generation makes the next write due."""
        k = self.tokens_per_chunk
        return min((generated // k + 1) * k, self.total_tokens) - 1

    def flush_head(self) -> None:
        """Send the HTTP head (and the chat role chunk) now, before any token is due."""
        if self._streamed and not self._head_sent and not self.done:
            self._emit()

    def advance(self, generated: int) -> None:
        """`generated` tokens (cumulative) now exist; write whatever that completes."""
        self.generated = generated
        if not (self.done or self._held):
            self._emit()

    def cancel(self) -> None:
        """The client went away: stop writing and tell the timing model."""
        if self.done:
            return
        self.done = True
        if self._release_handle is not None:
            self._release_handle.cancel()
        if self.on_cancel is not None:
            self.on_cancel()

    def _emit(self) -> None:
        if not self._streamed:
            if self.generated >= self.total_tokens:
                self._emit_body()
            return
        total = self._chunks_total
        k = self.tokens_per_chunk
        ready = total if self.generated >= self.total_tokens else self.generated // k
        if ready <= self._chunks_sent and self._head_sent:
            return
        writer = self._chunk_writer
        assert writer is not None
        stamp_ns = time.monotonic_ns() if self._stamp else None
        parts: list[bytes] = []
        events: list[bytes] = []
        if not self._head_sent:
            self._head_sent = True
            parts.append(STREAM_HEAD_KEEP_ALIVE if self._keep_alive else STREAM_HEAD_CLOSE)
            if self.api == "chat":
                events.append(writer.role(stamp_ns))
        reasoning_total = self.reasoning_tokens
        # Every event but the last carries exactly k tokens, so events that lie wholly in
        # the reasoning part, or wholly in the content part, are identical within one
        # write: build one and repeat it (the hot path at low latency and large k).
        reasoning_runs_to = reasoning_total // k
        content_runs_from = -(-reasoning_total // k)
        sent = self._chunks_sent
        while sent < ready:
            if sent == self._fault_chunk and self._fault is not Fault.NONE:
                fault, self._fault = self._fault, Fault.NONE
                if fault is Fault.MALFORMED:
                    events.append(MALFORMED_EVENT)
                else:
                    self._chunks_sent = sent
                    if events:
                        parts.append(http_chunk(b"".join(events)))
                    if parts:
                        self._sink.write(b"".join(parts))
                    if fault is Fault.DROP:
                        self.done = True
                        self._sink.drop_connection()
                    else:
                        self._hold()
                    return
            stop = min(ready, total - 1)
            if self._fault is not Fault.NONE and self._fault_chunk > sent:
                stop = min(stop, self._fault_chunk)
            if sent < stop and (sent < reasoning_runs_to or sent >= content_runs_from):
                if sent < reasoning_runs_to:
                    stop = min(stop, reasoning_runs_to)
                    event = writer.tokens(k, 0, None, stamp_ns)
                else:
                    event = writer.tokens(0, k, None, stamp_ns)
                events.extend([event] * (stop - sent))
                sent = stop
                continue
            first = sent * k
            last = min(first + k, self.total_tokens)
            reasoning = max(0, min(last, reasoning_total) - first)
            finish = self._finish_reason if sent == total - 1 else None
            events.append(writer.tokens(reasoning, last - first - reasoning, finish, stamp_ns))
            sent += 1
        if self._truth_ttft_ns is not None and self._chunks_sent == 0 and sent > 0:
            self._truth_ttft_ns.append(time.monotonic_ns() - self._received_ns)
            self._truth_ttft_ns = None
        self._chunks_sent = sent
        finished = self._chunks_sent == total
        if finished:
            if self._include_usage:
                events.append(writer.usage(self.prompt_tokens, self.total_tokens, stamp_ns))
            events.append(DONE_EVENT)
        if events:
            parts.append(http_chunk(b"".join(events)))
        if finished:
            parts.append(LAST_HTTP_CHUNK)
            self.done = True
        self._sink.write(b"".join(parts))
        if finished:
            self._sink.finish_response()

    def _emit_body(self) -> None:
        fault, self._fault = self._fault, Fault.NONE
        if fault is Fault.STALL:
            self._hold()
            return
        self.done = True
        if fault is Fault.DROP:
            self._sink.drop_connection()
            return
        if fault is Fault.MALFORMED:
            body = _MALFORMED_BODY
        else:
            body = completion_body(
                api=self.api,
                request_id=self._request_id,
                created=self.created,
                model=self._model,
                reasoning_tokens=self.reasoning_tokens,
                content_tokens=self.content_tokens,
                finish_reason=self._finish_reason,
                prompt_tokens=self.prompt_tokens,
            )
        self._sink.write(json_response(200, body, keep_alive=self._keep_alive))
        self._sink.finish_response()

    def _hold(self) -> None:
        self._held = True
        self._release_handle = self._loop.call_later(self._stall_s, self._release)

    def _release(self) -> None:
        self._release_handle = None
        self._held = False
        if not self.done:
            self._emit()
