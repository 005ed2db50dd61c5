"""The OpenAI wire format as the simulator speaks it: shapes, endpoints, errors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from orchestrator.simulator import Simulator, SimulatorConfig, start_in_thread


def test_streaming_chat_shape_usage_and_done(
    fast_sim: Simulator, client: httpx.Client, stream_post: Any, chat: Any
) -> None:
    result = stream_post(client, fast_sim.url + "/chat/completions", chat())
    assert result.status == 200
    assert result.headers["content-type"] == "text/event-stream"
    assert result.headers["transfer-encoding"] == "chunked"
    assert result.error is None
    # events are separated by a blank line and nothing else is sent
    events = result.raw.decode().split("\n\n")
    assert events[-1] == ""
    assert all(event.startswith("data: ") for event in events[:-1])

    assert result.payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in result.payloads[:-1]]
    role, *content, usage = chunks
    assert role["object"] == "chat.completion.chunk"
    assert role["model"] == "sim-model"
    assert role["id"].startswith("chatcmpl-")
    assert role["choices"] == [
        {
            "index": 0,
            "delta": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": None,
        }
    ]
    assert len(content) == 5  # one token per event
    assert all(c["id"] == role["id"] and c["created"] == role["created"] for c in chunks)
    assert [c["choices"][0]["delta"] for c in content] == [{"content": "tok "}] * 5
    assert [c["choices"][0]["finish_reason"] for c in content] == [None] * 4 + ["stop"]
    assert usage["choices"] == []
    # prompt tokens = whitespace-separated words of all messages: 2 + 4
    assert usage["usage"] == {"prompt_tokens": 6, "completion_tokens": 5, "total_tokens": 11}
    assert "rb_server_ns" not in role


def test_no_usage_chunk_unless_asked(
    fast_sim: Simulator, client: httpx.Client, stream_post: Any, chat: Any
) -> None:
    result = stream_post(client, fast_sim.url + "/chat/completions", chat(stream_options=None))
    assert result.payloads[-1] == "[DONE]"
    assert all("usage" not in c for c in result.chunks)
    assert result.chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("limits", "expected_tokens", "finish"),
    [
        ({"max_tokens": 3}, 3, "length"),
        ({"max_tokens": 5}, 5, "stop"),
        ({"max_tokens": 100}, 5, "stop"),
        ({"max_completion_tokens": 2, "max_tokens": 4}, 2, "length"),
    ],
)
def test_max_tokens_caps_output(
    fast_sim: Simulator,
    client: httpx.Client,
    limits: dict[str, int],
    expected_tokens: int,
    finish: str,
    stream_post: Any,
    chat: Any,
) -> None:
    result = stream_post(client, fast_sim.url + "/chat/completions", chat(**limits))
    content = [c for _, c in result.content_chunks]
    assert len(content) == expected_tokens
    assert content[-1]["choices"][0]["finish_reason"] == finish
    assert result.chunks[-1]["usage"]["completion_tokens"] == expected_tokens


def test_tokens_per_chunk_groups_tokens(client: httpx.Client, stream_post: Any, chat: Any) -> None:
    config = SimulatorConfig(ttft_ms=0, tpot_ms=0, output_tokens=20, tokens_per_chunk=3)
    with start_in_thread(config) as sim:
        result = stream_post(client, sim.url + "/chat/completions", chat())
    texts = [c["choices"][0]["delta"]["content"] for _, c in result.content_chunks]
    assert texts == ["tok " * 3] * 6 + ["tok " * 2]
    assert result.chunks[-1]["usage"]["completion_tokens"] == 20


def test_reasoning_tokens_come_first(client: httpx.Client, stream_post: Any, chat: Any) -> None:
    config = SimulatorConfig(
        ttft_ms=0, tpot_ms=0, output_tokens=3, reasoning_tokens=3, tokens_per_chunk=2
    )
    with start_in_thread(config) as sim:
        result = stream_post(client, sim.url + "/chat/completions", chat())
        full = client.post(sim.url + "/chat/completions", json=chat(stream=False)).json()
    deltas = [c["choices"][0]["delta"] for _, c in result.content_chunks]
    assert deltas == [
        {"reasoning_content": "think think "},
        {"reasoning_content": "think ", "content": "tok "},
        {"content": "tok tok "},
    ]
    assert result.chunks[-1]["usage"]["completion_tokens"] == 6
    message = full["choices"][0]["message"]
    assert message["reasoning_content"] == "think " * 3
    assert message["content"] == "tok " * 3


def test_non_streaming_chat(fast_sim: Simulator, client: httpx.Client, chat: Any) -> None:
    response = client.post(
        fast_sim.url + "/chat/completions", json=chat(stream=False, max_tokens=4)
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "sim-model"
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "tok " * 4},
            "logprobs": None,
            "finish_reason": "length",
        }
    ]
    assert body["usage"] == {"prompt_tokens": 6, "completion_tokens": 4, "total_tokens": 10}


def test_completions_streaming_and_not(
    fast_sim: Simulator, client: httpx.Client, stream_post: Any
) -> None:
    url = fast_sim.url + "/completions"
    body = {"model": "sim-model", "prompt": "a b c", "stream": True}
    result = stream_post(
        client, url, {**body, "stream_options": {"include_usage": True}, "max_tokens": 3}
    )
    assert result.status == 200
    assert result.payloads[-1] == "[DONE]"
    *content, usage = result.chunks
    assert [c["object"] for c in content] == ["text_completion"] * 3  # no role chunk
    assert [c["choices"][0]["text"] for c in content] == ["tok "] * 3
    assert content[-1]["choices"][0]["finish_reason"] == "length"
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}

    full = client.post(url, json={**body, "stream": False}).json()
    assert full["object"] == "text_completion"
    assert full["choices"][0]["text"] == "tok " * 5
    assert full["choices"][0]["finish_reason"] == "stop"
    assert full["usage"]["prompt_tokens"] == 3
    # a prompt given as token ids counts its ids
    ids = client.post(url, json={"prompt": [1, 2, 3, 4], "max_tokens": 1}).json()
    assert ids["usage"]["prompt_tokens"] == 4


def test_models_and_health(fast_sim: Simulator, client: httpx.Client) -> None:
    models = client.get(fast_sim.url + "/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["sim-model"]
    assert client.get(fast_sim.url.removesuffix("/v1") + "/health").status_code == 200
    stats = client.get(fast_sim.url.removesuffix("/v1") + "/sim/stats").json()
    assert stats["cpu_s"] > 0


def test_api_key_required(client: httpx.Client, chat: Any) -> None:
    with start_in_thread(SimulatorConfig(ttft_ms=0, tpot_ms=0, api_key="s3cret")) as sim:
        url = sim.url + "/chat/completions"
        missing = client.post(url, json=chat(stream=False))
        wrong = client.post(url, json=chat(stream=False), headers={"Authorization": "x"})
        models = client.get(sim.url + "/models")
        good = client.post(url, json=chat(stream=False), headers={"Authorization": "Bearer s3cret"})
    for response in (missing, wrong, models):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "invalid_api_key"
    assert good.status_code == 200


def test_unknown_model_route_and_method(
    fast_sim: Simulator, client: httpx.Client, chat: Any
) -> None:
    response = client.post(fast_sim.url + "/chat/completions", json=chat(model="gpt-9"))
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "model_not_found"
    assert "gpt-9" in error["message"]
    assert client.get(fast_sim.url + "/nothing").status_code == 404
    assert client.get(fast_sim.url + "/chat/completions").status_code == 405


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "Expected `object`"),
        (b'{"model": "sim-model"}', "missing required field `messages`"),
        (b'{"messages": []}', "at least one message"),
        (b'{"messages": "hi"}', "$.messages"),
        (b'{"messages": [{"role": "user", "content": 3}]}', "$.messages[0].content"),
        (b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}', "max_tokens"),
        (b'{"messages": [{"role": "user", "content": "x"}], "n": 2}', "n = 1"),
        (b"", "not valid JSON"),
    ],
)
def test_bad_requests_get_400_json(
    fast_sim: Simulator, client: httpx.Client, content: bytes, fragment: str
) -> None:
    response = client.post(fast_sim.url + "/chat/completions", content=content)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert fragment in error["message"]


def test_config_validation() -> None:
    with pytest.raises(ValidationError):
        SimulatorConfig(ttft_msec=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="must not exceed 1"):
        SimulatorConfig(error_rate=0.6, drop_rate=0.6)
    with pytest.raises(ValidationError):
        SimulatorConfig(tokens_per_chunk=0)
