"""HTTP/1.1 on one connection: `asyncio.Protocol` + httptools, keep-alive, pipelining.

Bytes may arrive in any pieces; httptools (llhttp) reassembles them and calls back per
URL piece, header, body piece and message end. A completed request is queued and handled
after `feed_data` returns, never inside a parser callback (an exception there would be
reported as a parser error). Responses go out in request order: a request that arrives
while the previous response is still streaming (HTTP pipelining) waits in the queue, and
reading pauses while more than a few wait. A request counts as received when its last
byte has been parsed; that instant (monotonic) starts its TTFT.

Only what the simulator needs is kept from the headers (Authorization, Expect). Limits
keep a broken client from growing memory: 64 KiB of request line + headers (431) and
16 MiB of body (413); unparseable bytes get a 400 and the connection is closed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Final, Protocol, cast

import httptools

from orchestrator.simulator._stream import TokenStream
from orchestrator.simulator._wire import error_body, json_response

__all__ = ["Connection", "Request", "RequestHandler"]

_log = logging.getLogger("orchestrator.simulator")

_MAX_HEAD_BYTES: Final = 64 * 1024
_MAX_BODY_BYTES: Final = 16 * 1024 * 1024
_MAX_PENDING: Final = 8
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"


class Request:
    """One fully received request."""

    __slots__ = ("authorization", "body", "keep_alive", "method", "path", "received_s")

    def __init__(
        self,
        *,
        method: bytes,
        path: bytes,
        authorization: bytes | None,
        body: bytes,
        keep_alive: bool,
        received_s: float,
    ) -> None:
        self.method = method
        self.path = path
        self.authorization = authorization
        self.body = body
        self.keep_alive = keep_alive
        self.received_s = received_s


class RequestHandler(Protocol):
    """The application (`_app.SimulatorApp`) as the connection sees it."""

    connections: set[Connection]

    def handle(self, connection: Connection, request: Request) -> None: ...


class Connection(asyncio.Protocol):
    """One client connection; also the `ResponseSink` of the response in flight."""

    def __init__(self, handler: RequestHandler) -> None:
        self._handler = handler
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._url_parts: list[bytes] = []
        self._body_parts: list[bytes] = []
        self._head_bytes = 0
        self._body_bytes = 0
        self._authorization: bytes | None = None
        self._expect_continue = False
        self._pending: deque[Request] = deque()
        self._busy = False  # a response is in flight
        self._draining = False
        self._keep_alive = True
        self._eof = False  # the client half-closed: no more requests will come
        self._reading_paused = False
        self._closed = False
        self._refused: tuple[int, str] | None = None  # a limit was hit mid-request
        self.stream: TokenStream | None = None  # set by the handler for generation requests

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it
        self._transport = cast(asyncio.Transport, transport)
        self._handler.connections.add(self)

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse(400, "Protocol upgrades are not supported")
            return
        except httptools.HttpParserError as exc:
            if self._refused is not None:
                self._refuse(*self._refused)
            else:
                self._refuse(400, f"Malformed HTTP request: {exc}")
            return
        if self._pending and not self._busy:
            self._drain()

    def eof_received(self) -> bool | None:
        # Half-closed by the client: answer what was received, then close.
        self._eof = True
        if not self._busy and not self._pending:
            self.close()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._handler.connections.discard(self)
        self._pending.clear()
        stream, self.stream = self.stream, None
        if stream is not None:
            stream.cancel()

    # httptools callbacks

    def on_message_begin(self) -> None:
        self._url_parts.clear()
        self._body_parts.clear()
        self._head_bytes = 0
        self._body_bytes = 0
        self._authorization = None
        self._expect_continue = False

    def on_url(self, url: bytes) -> None:
        self._url_parts.append(url)
        self._head_bytes += len(url)
        if self._head_bytes > _MAX_HEAD_BYTES:
            self._refused = (431, "Request line and headers exceed 64 KiB")
            raise ValueError("head too large")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value)
        if self._head_bytes > _MAX_HEAD_BYTES:
            self._refused = (431, "Request line and headers exceed 64 KiB")
            raise ValueError("head too large")
        lowered = name.lower()
        if lowered == b"authorization":
            self._authorization = value
        elif lowered == b"expect" and value.lower() == b"100-continue":
            self._expect_continue = True
        elif lowered == b"content-length" and value.isdigit() and int(value) > _MAX_BODY_BYTES:
            self._body_too_large()

    def _body_too_large(self) -> None:
        self._refused = (413, "Request body exceeds 16 MiB")
        raise ValueError("body too large")

    def on_headers_complete(self) -> None:
        if self._expect_continue:  # the client waits for this before sending the body
            self.write(_CONTINUE)

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > _MAX_BODY_BYTES:
            self._body_too_large()
        self._body_parts.append(body)

    def on_message_complete(self) -> None:
        url = b"".join(self._url_parts)
        path = url.split(b"?", 1)[0]
        if path.startswith((b"http://", b"https://")):  # absolute-form request target
            pieces = path.split(b"/", 3)
            path = b"/" + (pieces[3] if len(pieces) == 4 else b"")
        self._pending.append(
            Request(
                method=self._parser.get_method(),
                path=path,
                authorization=self._authorization,
                body=b"".join(self._body_parts),
                keep_alive=self._parser.should_keep_alive(),
                received_s=time.monotonic(),
            )
        )
        if len(self._pending) > _MAX_PENDING and not self._reading_paused:
            self._reading_paused = True
            assert self._transport is not None
            self._transport.pause_reading()

    # dispatch

    def _drain(self) -> None:
        if self._draining:
            return  # a response finished synchronously inside handle(); the loop below goes on
        self._draining = True
        try:
            while self._pending and not self._busy and not self._closed:
                request = self._pending.popleft()
                self._busy = True
                self._keep_alive = request.keep_alive and not (self._eof and not self._pending)
                try:
                    self._handler.handle(self, request)
                except Exception:  # a bug must not kill the connection's peers
                    _log.exception("simulator: unhandled error for %r", request.path)
                    if self._busy and not self._closed:
                        self._keep_alive = False
                        body = error_body("Internal simulator error", kind="server_error")
                        self.respond(json_response(500, body, keep_alive=False))
        finally:
            self._draining = False
        if self._reading_paused and len(self._pending) <= _MAX_PENDING // 2 and not self._closed:
            self._reading_paused = False
            assert self._transport is not None
            self._transport.resume_reading()

    def _refuse(self, status: int, message: str) -> None:
        """Answer a request that cannot be parsed or is too large, then close."""
        self._keep_alive = False
        self._pending.clear()
        if not self._busy:
            body = error_body(message, kind="invalid_request_error")
            self.write(json_response(status, body, keep_alive=False))
        self.close()

    # ResponseSink (and immediate responses)

    @property
    def keep_alive(self) -> bool:
        return self._keep_alive

    def write(self, data: bytes) -> None:
        transport = self._transport
        if transport is not None and not self._closed and not transport.is_closing():
            transport.write(data)

    def respond(self, data: bytes) -> None:
        """Send a complete response and finish it."""
        self.write(data)
        self.finish_response()

    def finish_response(self) -> None:
        self._busy = False
        self.stream = None
        if not self._keep_alive:
            self.close()
        elif self._pending and not self._draining:
            self._drain()

    def drop_connection(self) -> None:
        """Close mid-response (a simulated drop): what was written is flushed first."""
        self._pending.clear()
        self.close()

    def close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()
