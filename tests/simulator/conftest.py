"""Fixtures for the simulator tests: a zero-latency server on loopback, an httpx client, and
an SSE reader that timestamps each event as it arrives (`stream_post`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from orchestrator.simulator import Simulator, SimulatorConfig, start_in_thread


@dataclass
class StreamResult:
    status: int
    headers: httpx.Headers
    raw: bytes = b""
    payloads: list[str] = field(default_factory=list)  # `data:` payloads, in order
    arrival_s: list[float] = field(default_factory=list)  # perf_counter() per payload
    sent_s: float = 0.0
    error: Exception | None = None

    @property
    def chunks(self) -> list[dict[str, Any]]:
        """The JSON chunks (skipping [DONE] and anything that is not JSON)."""
        out = []
        for payload in self.payloads:
            try:
                out.append(json.loads(payload))
            except json.JSONDecodeError:
                continue
        return out

    @property
    def content_chunks(self) -> list[tuple[float, dict[str, Any]]]:
        """(arrival, chunk) of chunks that carry tokens (content, reasoning or text)."""
        out = []
        for arrival, payload in zip(self.arrival_s, self.payloads, strict=True):
            try:
                chunk = json.loads(payload)
            except json.JSONDecodeError:
                continue
            if not chunk.get("choices"):
                continue
            choice = chunk["choices"][0]
            delta = choice.get("delta", {})
            if choice.get("text") or delta.get("content") or delta.get("reasoning_content"):
                out.append((arrival, chunk))
        return out


def stream_request(client: httpx.Client, url: str, body: dict[str, Any]) -> StreamResult:
    """POST `body` and read the SSE response event by event, timestamping arrivals."""
    sent = time.perf_counter()
    with client.stream("POST", url, json=body) as response:
        result = StreamResult(status=response.status_code, headers=response.headers, sent_s=sent)
        buffer = b""
        try:
            for piece in response.iter_raw():
                now = time.perf_counter()
                result.raw += piece
                buffer += piece
                while b"\n\n" in buffer:
                    event, buffer = buffer.split(b"\n\n", 1)
                    for line in event.split(b"\n"):
                        if line.startswith(b"data: "):
                            result.payloads.append(line[6:].decode())
                            result.arrival_s.append(now)
        except httpx.HTTPError as exc:
            result.error = exc
    return result


def chat_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "sim-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "one two three four"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(overrides)
    return body


StreamPost = Callable[[httpx.Client, str, dict[str, Any]], StreamResult]
ChatBody = Callable[..., dict[str, Any]]


@pytest.fixture
def stream_post() -> StreamPost:
    return stream_request


@pytest.fixture
def chat() -> ChatBody:
    return chat_body


@pytest.fixture(scope="module")
def fast_sim() -> Iterator[Simulator]:
    """Zero latency, 5 tokens: for shape tests."""
    with start_in_thread(SimulatorConfig(ttft_ms=0, tpot_ms=0, output_tokens=5)) as sim:
        yield sim


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as c:
        yield c
