"""The HTTP/1.1 layer on raw sockets: keep-alive, pipelining, fragmented requests, limits,
disconnects; and the ways of starting the server (thread, process, running loop)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import httptools
import httpx
import pytest

from orchestrator.simulator import (
    Simulator,
    SimulatorConfig,
    serve,
    start_in_process,
    start_in_thread,
)


class _Response:
    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""
        self.complete = False


class _ResponseReader:
    """Parses responses off a socket with httptools; callbacks fill `_Response`s."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._parser = httptools.HttpResponseParser(self)
        self.responses: list[_Response] = []
        self.closed = False

    def on_message_begin(self) -> None:
        self.responses.append(_Response())

    def on_header(self, name: bytes, value: bytes) -> None:
        self.responses[-1].headers[name.decode().lower()] = value.decode()

    def on_headers_complete(self) -> None:
        self.responses[-1].status = self._parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self.responses[-1].body += body

    def on_message_complete(self) -> None:
        self.responses[-1].complete = True

    def read(self, count: int, timeout_s: float = 5.0) -> list[_Response]:
        """Read until `count` responses are complete or the server closes."""
        self._sock.settimeout(timeout_s)
        while sum(r.complete for r in self.responses) < count:
            data = self._sock.recv(65536)
            if not data:
                self.closed = True
                break
            self._parser.feed_data(data)
        return self.responses

    def server_closed(self, timeout_s: float = 2.0) -> bool:
        self._sock.settimeout(timeout_s)
        try:
            return self._sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError):
            return False


def _post(path: str, body: dict[str, Any] | bytes, extra: bytes = b"") -> bytes:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (
        b"POST %s HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n%s\r\n%s" % (path.encode(), len(payload), extra, payload)
    )


CHAT = {"messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 3}


def _connect(sim: Simulator) -> socket.socket:
    return socket.create_connection(("127.0.0.1", sim.port), timeout=5)


def test_keep_alive_serves_several_requests_on_one_connection(fast_sim: Simulator) -> None:
    with _connect(fast_sim) as sock:
        reader = _ResponseReader(sock)
        for i in range(1, 6):
            stream = i % 2 == 1
            sock.sendall(_post("/v1/chat/completions", {**CHAT, "stream": stream}))
            responses = reader.read(i)
            assert len(responses) == i and responses[-1].status == 200
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: sim\r\n\r\n")
        assert reader.read(6)[-1].status == 200
        assert not reader.closed
    kinds = [r.headers["content-type"] for r in reader.responses[:5]]
    assert kinds == ["text/event-stream", "application/json"] * 2 + ["text/event-stream"]
    assert reader.responses[0].body.endswith(b"data: [DONE]\n\n")


def test_pipelined_requests_are_answered_in_order(fast_sim: Simulator) -> None:
    with _connect(fast_sim) as sock:
        reader = _ResponseReader(sock)
        sock.sendall(
            _post("/v1/chat/completions", CHAT)
            + b"GET /nowhere HTTP/1.1\r\nHost: sim\r\n\r\n"
            + _post("/v1/completions", {"prompt": "x", "max_tokens": 2})
        )
        responses = reader.read(3)
    assert [r.status for r in responses] == [200, 404, 200]
    assert responses[0].body.endswith(b"data: [DONE]\n\n")
    assert json.loads(responses[2].body)["object"] == "text_completion"


def test_request_arriving_byte_by_byte(fast_sim: Simulator) -> None:
    request = _post("/v1/chat/completions", {**CHAT, "stream": False})
    with _connect(fast_sim) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(request)):
            sock.send(request[i : i + 1])
            if i % 40 == 0:
                time.sleep(0.001)  # make sure the pieces arrive as separate reads
        (response,) = _ResponseReader(sock).read(1)
    assert response.status == 200
    assert json.loads(response.body)["usage"]["completion_tokens"] == 3


def test_connection_close_and_http10(fast_sim: Simulator) -> None:
    for request in (
        _post("/v1/chat/completions", CHAT, extra=b"Connection: close\r\n"),
        b"GET /health HTTP/1.0\r\n\r\n",
    ):
        with _connect(fast_sim) as sock:
            sock.sendall(request)
            reader = _ResponseReader(sock)
            (response,) = reader.read(1)
            assert response.status == 200
            assert response.headers.get("connection") == "close"
            assert reader.server_closed()


def test_expect_100_continue(fast_sim: Simulator) -> None:
    body = json.dumps({**CHAT, "stream": False}).encode()
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: %d\r\n"
        b"Expect: 100-continue\r\n\r\n" % len(body)
    )
    with _connect(fast_sim) as sock:
        sock.sendall(head)
        assert sock.recv(1024).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        (response,) = _ResponseReader(sock).read(1)
    assert response.status == 200


def test_garbage_gets_400_and_close(fast_sim: Simulator) -> None:
    with _connect(fast_sim) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        reader = _ResponseReader(sock)
        (response,) = reader.read(1)
        assert response.status == 400
        assert "error" in json.loads(response.body)
        assert reader.server_closed()


def test_oversized_body_gets_413(fast_sim: Simulator) -> None:
    with _connect(fast_sim) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: sim\r\n"
            b"Content-Length: 20000000\r\n\r\n" + b" " * 65536
        )
        (response,) = _ResponseReader(sock).read(1)
    assert response.status == 413


def _stats(client: httpx.Client, sim: Simulator) -> dict[str, Any]:
    stats: dict[str, Any] = client.get(sim.url.removesuffix("/v1") + "/sim/stats").json()
    return stats


@pytest.mark.parametrize("mode", ["fixed", "batching"])
def test_client_disconnect_mid_stream_frees_the_request(mode: str, client: httpx.Client) -> None:
    config = SimulatorConfig(mode=mode, ttft_ms=1, tpot_ms=20, decode_step_ms=20, output_tokens=200)
    with start_in_thread(config) as sim:
        with _connect(sim) as sock:
            sock.sendall(_post("/v1/chat/completions", CHAT | {"max_tokens": 200}))
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 OK")
            time.sleep(0.05)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            stats = _stats(client, sim)
            if stats["connections"] == 1 and stats["batch_running"] == 0:
                break
            time.sleep(0.01)
        assert stats["connections"] == 1  # only the stats client's own connection
        assert stats["batch_running"] == 0
        # the server is fine afterwards
        assert (
            client.post(sim.url + "/completions", json={"prompt": "x", "max_tokens": 1}).status_code
            == 200
        )


def test_start_in_process(chat: Any) -> None:
    config = SimulatorConfig(ttft_ms=0, tpot_ms=0, output_tokens=4)
    with start_in_process(config) as url:
        assert url.endswith("/v1")
        response = httpx.post(url + "/chat/completions", json=chat(stream=False), timeout=10)
        assert response.json()["usage"]["completion_tokens"] == 4
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/models", timeout=2)


def test_serve_on_a_running_loop(chat: Any) -> None:
    async def main() -> dict[str, Any]:
        config = SimulatorConfig(ttft_ms=0, tpot_ms=0, output_tokens=2)
        async with await serve(config) as sim, httpx.AsyncClient() as client:
            response = await client.post(sim.url + "/chat/completions", json=chat(stream=False))
            body: dict[str, Any] = response.json()
            return body

    assert asyncio.run(main())["usage"]["completion_tokens"] == 2
