"""The same transport contract on aiohttp, kept so the benchmark can compare and choose.

Reads are stamped when `iter_any()` hands bytes to us, which is later than the socket read
by aiohttp's own buffering; the benchmark measures what that costs in TTFT fidelity and
CPU per event against the native transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import aiohttp

from orchestrator.loadgen.exchange import Exchange
from orchestrator.loadgen.records import Failure
from orchestrator.loadgen.transport import PreparedRequest, Target, Timeouts

_now = time.monotonic_ns


class AiohttpTransport:
    def __init__(
        self, target: Target, *, timeouts: Timeouts, connect_parallelism: int = 64
    ) -> None:
        self.target = target
        self.timeouts = timeouts
        self._session: aiohttp.ClientSession | None = None
        self._tasks: dict[asyncio.Task[None], Exchange] = {}
        self._ssl = target.ssl_context()

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, force_close=False),
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=self.timeouts.connect_s, sock_read=None
                ),
                auto_decompress=False,
            )
        return self._session

    async def warm(self, connections: int) -> int:
        return 0  # aiohttp opens on demand

    def start(self, request: PreparedRequest, exchange: Exchange) -> None:
        task = asyncio.get_running_loop().create_task(self._send(request, exchange))
        self._tasks[task] = exchange

    async def _send(self, request: PreparedRequest, exchange: Exchange) -> None:
        task = asyncio.current_task()
        try:
            async with asyncio.timeout(self.timeouts.total_s):
                await self._exchange(request, exchange)
        except TimeoutError:
            exchange.fail(Failure.TIMEOUT, _now(), f"total timeout {self.timeouts.total_s:g} s")
        except asyncio.CancelledError:
            exchange.fail(Failure.TIMEOUT, _now(), "cancelled at the drain deadline")
        finally:
            if task is not None:
                self._tasks.pop(task, None)

    async def _exchange(self, request: PreparedRequest, exchange: Exchange) -> None:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        headers.update(request.headers)
        session = self._get_session()
        try:
            async with session.post(
                self.target.url, data=request.body, headers=headers, ssl=self._ssl or False
            ) as resp:
                exchange.on_headers(resp.status, _now())
                while True:
                    try:
                        data = await asyncio.wait_for(
                            resp.content.readany(), timeout=self.timeouts.stall_s
                        )
                    except TimeoutError:
                        exchange.fail(
                            Failure.STALL, _now(), f"no byte for {self.timeouts.stall_s:g} s"
                        )
                        return
                    if not data:
                        break
                    if not exchange.on_body(data, _now()):
                        return
                exchange.on_message_complete(_now())
        except (aiohttp.ClientConnectorError, aiohttp.InvalidURL) as exc:
            exchange.fail(Failure.CONNECT, _now(), f"connect failed: {exc}")
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            exchange.on_connection_lost(_now(), f"connection lost: {exc}")
        except aiohttp.ClientResponseError as exc:
            exchange.fail(Failure.MALFORMED_STREAM, _now(), f"invalid HTTP response: {exc}")
        except aiohttp.ClientError as exc:
            exchange.on_connection_lost(_now(), f"connection error: {exc}")

    def abort_in_flight(self, detail: str) -> int:
        n = 0
        for task, ex in list(self._tasks.items()):
            if not ex.finished:
                ex.fail(Failure.TIMEOUT, _now(), detail)
                n += 1
            task.cancel()
        return n

    async def close(self) -> None:
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.close()
            self._session = None
