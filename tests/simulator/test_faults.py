"""Faults do what they say, and a seed makes the whole fault pattern reproducible."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import httpx
import pytest

from orchestrator.simulator import SimulatorConfig, start_in_thread

FAST = {"ttft_ms": 0.0, "tpot_ms": 1.0, "output_tokens": 5}


def _finish_reasons(result: Any) -> list[str]:
    return [
        c["choices"][0]["finish_reason"]
        for c in result.chunks
        if c.get("choices") and c["choices"][0]["finish_reason"]
    ]


def test_error_rate_gives_500_json(client: httpx.Client, chat: Any) -> None:
    with start_in_thread(SimulatorConfig(error_rate=1.0, **FAST)) as sim:
        response = client.post(sim.url + "/chat/completions", json=chat())
        assert response.status_code == 500
        assert response.json()["error"]["type"] == "server_error"
        # the connection survives a 500: the next request on it is answered too
        assert client.get(sim.url + "/models").status_code == 200


def test_drop_closes_mid_stream(client: httpx.Client, stream_post: Any, chat: Any) -> None:
    with start_in_thread(SimulatorConfig(drop_rate=1.0, **FAST)) as sim:
        result = stream_post(client, sim.url + "/chat/completions", chat())
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(sim.url + "/chat/completions", json=chat(stream=False))
    assert result.status == 200
    assert isinstance(result.error, httpx.RemoteProtocolError)  # chunked body cut short
    assert 1 <= len(result.content_chunks) < 5  # mid-stream: some tokens, not all
    assert _finish_reasons(result) == []
    assert "[DONE]" not in result.payloads


def test_stall_pauses_with_connection_open_then_resumes(
    client: httpx.Client, stream_post: Any, chat: Any
) -> None:
    config = SimulatorConfig(stall_rate=1.0, stall_s=0.3, stamp=True, **FAST)
    with start_in_thread(config) as sim:
        result = stream_post(client, sim.url + "/chat/completions", chat())
        started = time.perf_counter()
        full = client.post(sim.url + "/chat/completions", json=chat(stream=False))
        non_stream_s = time.perf_counter() - started
    # server side (stamps): one pause of stall_s (timers may fire up to 1 ms early)
    stamps_s = [c["rb_server_ns"] / 1e9 for c in result.chunks]
    gaps = [b - a for a, b in itertools.pairwise(stamps_s)]
    stall_at = max(range(len(gaps)), key=gaps.__getitem__)
    assert 0.299 <= gaps[stall_at] < 0.35
    assert sorted(gaps)[-2] < 0.05  # only one stall
    # client side: the pause is what the client sees (its own read delays blur the edges)
    arrival_gaps = [b - a for a, b in itertools.pairwise(result.arrival_s)]
    assert max(arrival_gaps) >= 0.25
    # the stall came after at least one token event and before the last one
    tokens_before = [
        c for c in result.chunks[: stall_at + 1] if c["choices"][0]["delta"].get("content")
    ]
    assert tokens_before
    assert _finish_reasons(result) == ["stop"]
    assert result.payloads[-1] == "[DONE]"
    assert result.error is None
    assert full.status_code == 200 and non_stream_s >= 0.3


def test_malformed_event_mid_stream(client: httpx.Client, stream_post: Any, chat: Any) -> None:
    with start_in_thread(SimulatorConfig(malformed_rate=1.0, **FAST)) as sim:
        result = stream_post(client, sim.url + "/chat/completions", chat())
        full = client.post(sim.url + "/chat/completions", json=chat(stream=False))
    bad = [i for i, p in enumerate(result.payloads) if p == "{not json"]
    assert len(bad) == 1
    before = result.payloads[: bad[0]]
    assert any('"content":"tok' in p for p in before)  # after at least one token
    assert not any('"finish_reason":"stop"' in p for p in before)
    assert len(result.content_chunks) == 5  # the rest of the stream is intact
    assert _finish_reasons(result) == ["stop"]
    assert full.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        full.json()


def _outcome(client: httpx.Client, url: str, stream_post: Any, chat: Any) -> str:
    """A short signature of what happened to one request."""
    result = stream_post(client, url + "/chat/completions", chat())
    if result.status != 200:
        return f"http_{result.status}"
    tokens = len(result.content_chunks)
    if result.error is not None:
        return f"drop@{tokens}"
    # at zero latency a whole answer is one write (one stamp) unless it stalled
    if len({c["rb_server_ns"] for c in result.chunks}) > 1:
        return f"stall:{tokens}"
    if "{not json" in result.payloads:
        return f"malformed:{tokens}@{result.payloads.index('{not json')}"
    return f"ok:{tokens}"


def test_same_seed_same_fault_pattern(stream_post: Any, chat: Any) -> None:
    def pattern(seed: int) -> list[str]:
        config = SimulatorConfig(
            ttft_ms=0,
            tpot_ms=0,
            output_tokens=6,
            output_tokens_jitter=3,
            error_rate=0.15,
            drop_rate=0.15,
            stall_rate=0.1,
            stall_s=0.06,
            malformed_rate=0.15,
            stamp=True,
            seed=seed,
        )
        with start_in_thread(config) as sim, httpx.Client(timeout=10) as own:
            return [_outcome(own, sim.url, stream_post, chat) for _ in range(40)]

    first, second, other = pattern(7), pattern(7), pattern(8)
    assert first == second
    assert first != other
    kinds = {outcome.split(":")[0].split("@")[0] for outcome in first}
    assert kinds == {"http_500", "drop", "stall", "malformed", "ok"}  # all exercised


def test_fault_rates_are_shares_of_requests(client: httpx.Client, chat: Any) -> None:
    config = SimulatorConfig(ttft_ms=0, tpot_ms=0, output_tokens=1, error_rate=0.25, seed=3)
    n = 400
    with start_in_thread(config) as sim:
        statuses = [
            client.post(sim.url + "/chat/completions", json=chat(stream=False)).status_code
            for _ in range(n)
        ]
        stats = client.get(sim.url.removesuffix("/v1") + "/sim/stats").json()
    errors = statuses.count(500)
    assert errors == stats["faults_total"]["error"]
    assert abs(errors - 0.25 * n) < 4 * (n * 0.25 * 0.75) ** 0.5  # within 4 σ
