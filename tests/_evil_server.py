"""A loopback HTTP server that misbehaves in one chosen way, for fault-classification tests.

It reads each request (headers and Content-Length body), then answers with the bytes of the
chosen behaviour. Runs on its own event loop in a daemon thread; stops on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Iterator

ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
TOKEN = b'data: {"choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}\n\n'
FINISH = b'data: {"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}\n\n'
DONE = b"data: [DONE]\n\n"


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p)


def plain(status: str, content_type: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)

# behaviour -> (bytes to send, then: "keep" | "close" | "stall")
BEHAVIOURS: dict[str, tuple[bytes, str]] = {
    "ok": (SSE_HEAD + chunked(ROLE, TOKEN, FINISH, DONE) + b"0\r\n\r\n", "keep"),
    "html": (plain("200 OK", "text/html", b"<html>oops</html>\n\n\n"), "keep"),
    "json_body": (
        plain("200 OK", "application/json", b'{"choices":[{"message":{"content":"hi!"}}]}'),
        "keep",
    ),
    "truncated": (SSE_HEAD + chunked(ROLE, TOKEN, TOKEN), "close"),
    "no_finish": (SSE_HEAD + chunked(ROLE, TOKEN, TOKEN, DONE) + b"0\r\n\r\n", "keep"),
    "bad_json": (SSE_HEAD + chunked(ROLE, TOKEN, b"data: {oops\n\n", FINISH, DONE), "keep"),
    "huge": (SSE_HEAD + chunked(ROLE, b"data: " + b"x" * (10 * 1024 * 1024) + b"\n\n"), "keep"),
    "stall": (SSE_HEAD + chunked(ROLE, TOKEN), "stall"),
    "not_http": (b"hello there\r\n\r\n", "close"),
    "close_at_once": (b"", "close"),
    "empty_200": (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "keep"),
    "unauthorized": (
        plain("401 Unauthorized", "application/json", b'{"error":{"message":"bad key"}}'),
        "keep",
    ),
}


async def _handle(
    behaviour: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    payload, then = BEHAVIOURS[behaviour]
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(payload)
            await writer.drain()
            if then == "close":
                break
            if then == "stall":
                await asyncio.sleep(3600)
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


@contextlib.contextmanager
def evil_server(behaviour: str, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Yield the base URL (…/v1) of a server that always answers with `behaviour`."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, object] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)

        async def start() -> None:
            server = await asyncio.start_server(
                lambda r, w: _handle(behaviour, r, w), "127.0.0.1", 0, ssl=tls
            )
            holder["server"] = server
            holder["port"] = server.sockets[0].getsockname()[1]
            ready.set()

        loop.run_until_complete(start())
        loop.run_forever()
        # Let every handler run its `finally` (close its writer) before the loop goes away.
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        server = holder["server"]
        assert isinstance(server, asyncio.Server)
        loop.run_until_complete(server.wait_closed())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "evil server did not start"
    try:
        scheme = "https" if tls is not None else "http"
        yield f"{scheme}://127.0.0.1:{holder['port']}/v1"
    finally:

        def stop() -> None:
            server = holder["server"]
            assert isinstance(server, asyncio.Server)
            server.close()
            loop.stop()

        loop.call_soon_threadsafe(stop)
        thread.join(10)
