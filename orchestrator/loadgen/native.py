"""HTTP/1.1 client on asyncio.Protocol + httptools (llhttp): the measurement data path.

Why our own: the time of a chunk is the time its bytes reached the process, so the stamp
is taken first thing in `data_received`, before llhttp or JSON see the bytes; and the cost
per SSE event must stay at a few µs so that a client core can hold hundreds of streams
without its own queueing showing up as TTFT (see bench/README.md for the measurement).

Connections are kept alive and reused LIFO; an idle connection older than `max_idle_s` is
closed rather than reused, because a server may have dropped it and a request written to a
dead socket would fail through no fault of the endpoint. New connections are opened at a
paced rate (at most `connect_parallelism` connects in flight): thousands of connects at
once exhaust ephemeral ports and fail with EADDRNOTAVAIL. Timeouts are enforced by one
sweeper per transport, not by a timer per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable, Coroutine
from typing import Any, cast

import httptools

from orchestrator.loadgen.exchange import Exchange
from orchestrator.loadgen.records import Failure
from orchestrator.loadgen.transport import PreparedRequest, Target, Timeouts

_now: Callable[[], int] = time.monotonic_ns


class _Connection(asyncio.Protocol):
    __slots__ = (
        "_bad",
        "_parser",
        "_t",
        "bytes_in",
        "closing",
        "exchange",
        "idle_since_ns",
        "lost",
        "owner",
        "raw",
        "transport",
        "uses",
    )

    def __init__(self, owner: NativeTransport) -> None:
        self.owner = owner
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.exchange: Exchange | None = None
        self._t = 0
        self._bad = False
        self.lost = False
        self.idle_since_ns = 0
        self.closing = False  # we are closing it (not the peer)
        self.uses = 0  # requests started on this connection
        self.bytes_in = 0  # response bytes of the current request
        self.raw = b""  # the current request, kept for a stale-connection resend

    # asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError, AttributeError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        t = _now()  # the arrival time: before any parsing
        ex = self.exchange
        if ex is None:
            self.abort()  # bytes nobody asked for: the connection is out of step
            return
        self._t = t
        self.bytes_in += len(data)
        # Hold the completion callback until the parser is done with these bytes and the
        # connection is back in the pool: the next request may then reuse it at once.
        ex.hold = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            ex.fail(Failure.MALFORMED_STREAM, t, f"invalid HTTP response: {exc}")
            self._bad = True
        finally:
            ex.hold = False
        if self._bad:
            self.abort()
        ex.notify()

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost reports to the exchange

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        ex = self.exchange
        self.exchange = None
        self.owner._forget(self)
        if ex is None:
            if not self.closing:
                self.owner._closed_while_idle(self)
        elif not ex.finished and self.uses > 1 and self.bytes_in == 0:
            # A reused connection that the server had already closed: the request never
            # reached it (not one response byte). Sending it again on a fresh connection is
            # not a retry of a measured request; the issue time stays the original one.
            self.owner._resend(self.raw, ex)
        elif not ex.finished:
            reason = f"connection lost: {exc}" if exc else "connection closed by the server"
            ex.on_connection_lost(_now(), reason)

    # httptools callbacks -----------------------------------------------------------------

    def on_headers_complete(self) -> None:
        ex = self.exchange
        if ex is not None:
            ex.on_headers(self._parser.get_status_code(), self._t)

    def on_body(self, body: bytes) -> None:
        ex = self.exchange
        if ex is not None and not ex.on_body(body, self._t):
            self._bad = True

    def on_message_complete(self) -> None:
        ex = self.exchange
        if ex is None:
            return
        ex.on_message_complete(self._t)
        if self._bad:
            return
        self.exchange = None
        if self._parser.should_keep_alive():
            self.owner._release(self)
        else:
            self.owner._forget(self)
            self.abort()

    # ---------------------------------------------------------------------------------------

    def start(self, raw: bytes, exchange: Exchange) -> None:
        self.exchange = exchange
        self._bad = False
        self.uses += 1
        self.bytes_in = 0
        self.raw = raw
        assert self.transport is not None
        self.transport.write(raw)

    def abort(self) -> None:
        self.closing = True
        if self.transport is not None and not self.lost:
            self.transport.abort()

    def shut(self) -> None:
        self.closing = True
        if self.transport is not None and not self.lost:
            self.transport.close()


class NativeTransport:
    """One connection pool to one target, on the running event loop."""

    def __init__(
        self,
        target: Target,
        *,
        timeouts: Timeouts,
        max_idle_s: float = 4.0,
        connect_parallelism: int = 64,
        sweep_interval_s: float | None = None,
    ) -> None:
        self.target = target
        self.timeouts = timeouts
        self._max_idle_ns = int(max_idle_s * 1e9)
        self._connect_gate = asyncio.Semaphore(connect_parallelism)
        self._ssl = target.ssl_context()
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._prefix = (
            f"POST {target.path} HTTP/1.1\r\nHost: {target.host_header}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            "Connection: keep-alive\r\nUser-Agent: rollbench\r\n"
        ).encode("latin-1")
        interval = sweep_interval_s
        if interval is None:
            interval = min(timeouts.stall_s, timeouts.total_s) / 20
        self._sweep_interval_s = min(max(interval, 0.02), 1.0)
        self._sweeper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self.connections_opened = 0
        self.stale_resends = 0
        # Some servers (llama.cpp after a streamed answer) close every connection right after
        # the response while advertising keep-alive; once seen, stop reusing connections.
        self.keep_alive = True
        self._early_closes = 0

    # -- public -------------------------------------------------------------------------------

    async def warm(self, connections: int) -> int:
        missing = connections - len(self._idle) - len(self._busy)
        if missing > 0:
            results = await asyncio.gather(
                *(self._open() for _ in range(missing)), return_exceptions=True
            )
            for conn in results:
                if isinstance(conn, _Connection):
                    conn.idle_since_ns = _now()
                    self._idle.append(conn)
        return len(self._idle) + len(self._busy)

    def start(self, request: PreparedRequest, exchange: Exchange) -> None:
        self._ensure_sweeper()
        raw = request.raw
        if raw is None:
            raw = request.raw = self._render(request)
        conn = self._take_idle()
        if conn is None:
            self._in_background(self._open_and_start(raw, exchange))
            return
        self._busy.add(conn)
        conn.start(raw, exchange)

    async def _open_and_start(self, raw: bytes, exchange: Exchange) -> None:
        try:
            conn = await self._open()
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            exchange.fail(Failure.CONNECT, _now(), _connect_error(exc, self.target))
            return
        if exchange.finished:  # failed meanwhile (drain deadline): keep the connection
            self._release(conn)
            return
        self._busy.add(conn)
        conn.start(raw, exchange)

    def _in_background(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def abort_in_flight(self, detail: str) -> int:
        n = 0
        for conn in list(self._busy):
            ex = conn.exchange
            if ex is not None and not ex.finished:
                ex.fail(Failure.TIMEOUT, _now(), detail)
                n += 1
            conn.abort()
        return n

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        for conn in self._idle + list(self._busy):
            conn.shut()
        self._idle.clear()
        self._busy.clear()

    # -- pool ---------------------------------------------------------------------------------

    def _render(self, request: PreparedRequest) -> bytes:
        head = [self._prefix]
        for name, value in request.headers.items():
            head.append(f"{name}: {value}\r\n".encode("latin-1"))
        head.append(f"Content-Length: {len(request.body)}\r\n\r\n".encode("latin-1"))
        return b"".join(head) + request.body

    def _take_idle(self) -> _Connection | None:
        idle = self._idle
        now = _now()
        while idle:
            conn = idle.pop()
            transport = conn.transport
            if (
                conn.lost
                or transport is None
                or transport.is_closing()
                or now - conn.idle_since_ns > self._max_idle_ns
            ):
                conn.shut()
                continue
            return conn
        return None

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        async with self._connect_gate:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(self),
                    self.target.host,
                    self.target.port,
                    ssl=self._ssl,
                    server_hostname=self.target.host if self._ssl else None,
                ),
                timeout=self.timeouts.connect_s,
            )
        self.connections_opened += 1
        return conn

    def _release(self, conn: _Connection) -> None:
        self._busy.discard(conn)
        if not self.keep_alive:
            conn.abort()
            return
        conn.idle_since_ns = _now()
        self._idle.append(conn)

    def _closed_while_idle(self, conn: _Connection) -> None:
        if conn.uses and _now() - conn.idle_since_ns < 1_000_000_000:
            self._early_closes += 1
            if self._early_closes >= 3:
                self.keep_alive = False

    def _resend(self, raw: bytes, exchange: Exchange) -> None:
        self.stale_resends += 1
        self._early_closes += 1
        if self._early_closes >= 3:
            self.keep_alive = False
        self._in_background(self._open_and_start(raw, exchange))

    def _forget(self, conn: _Connection) -> None:
        self._busy.discard(conn)

    # -- timeouts -----------------------------------------------------------------------------

    def _ensure_sweeper(self) -> None:
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def _sweep(self) -> None:
        stall_ns = int(self.timeouts.stall_s * 1e9)
        total_ns = int(self.timeouts.total_s * 1e9)
        linger_ns = 1_000_000_000  # a finished stream whose HTTP message never ended
        while True:
            await asyncio.sleep(self._sweep_interval_s)
            now = _now()
            for conn in list(self._busy):
                ex = conn.exchange
                if ex is None:
                    continue
                if ex.finished:
                    if now - ex.end_ns > linger_ns:
                        conn.exchange = None
                        conn.abort()
                elif now - ex.last_byte_ns > stall_ns:
                    ex.fail(Failure.STALL, now, f"no byte for {self.timeouts.stall_s:g} s")
                    conn.abort()
                elif now - ex.issue_ns > total_ns:
                    ex.fail(Failure.TIMEOUT, now, f"total timeout {self.timeouts.total_s:g} s")
                    conn.abort()


def _connect_error(exc: BaseException, target: Target) -> str:
    if isinstance(exc, TimeoutError):
        return f"connect to {target.host}:{target.port} timed out"
    return f"connect to {target.host}:{target.port} failed: {exc}"
