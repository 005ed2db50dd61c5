"""Proves the llama.cpp fixture: a streaming chat request over TCP returns content and usage."""

from __future__ import annotations

import json
from typing import Any

import httpx

# tests/ has no __init__.py: pytest puts tests/ on sys.path for the files in it.
from _llama import llama_server


def _sse_events(response: httpx.Response) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    done = False
    for line in response.iter_lines():
        if not line.startswith("data: "):
            continue
        payload = line.removeprefix("data: ")
        if payload == "[DONE]":
            done = True
            break
        events.append(json.loads(payload))
    assert done, "stream ended without data: [DONE]"
    return events


def test_streaming_chat_returns_content_and_usage() -> None:
    with llama_server(n_parallel=4) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        models = httpx.get(f"{server.base_url}/models", timeout=10).json()
        assert server.model in [m["id"] for m in models["data"]]

        body = {
            "model": server.model,
            "messages": [
                {"role": "system", "content": "You are a concise assistant."},
                {"role": "user", "content": "Name three colors."},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": 16,
            "temperature": 0,
        }
        with httpx.stream(
            "POST", f"{server.base_url}/chat/completions", json=body, timeout=60
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = _sse_events(response)

    text = "".join(
        event["choices"][0]["delta"].get("content") or "" for event in events if event["choices"]
    )
    assert text.strip()
    finish = [e["choices"][0]["finish_reason"] for e in events if e["choices"]]
    assert finish[-1] == "length"
    usage = events[-1]["usage"]
    assert events[-1]["choices"] == []
    assert usage["completion_tokens"] == 16
    assert usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
