"""Classification of one exchange from the bytes a server sends (no network)."""

from __future__ import annotations

import json

import pytest

from orchestrator.loadgen.exchange import Exchange
from orchestrator.loadgen.records import Failure, FinishReason


def chunk(content: str | None = None, finish: str | None = None, **delta: object) -> bytes:
    d = dict(delta)
    if content is not None:
        d["content"] = content
    doc = {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


ROLE = chunk(role="assistant", content="")
USAGE = b'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\n'
DONE = b"data: [DONE]\n\n"


def run(pieces: list[tuple[bytes, int]], status: int = 200, stream: bool = True) -> Exchange:
    ex = Exchange(
        stream=stream,
        scheduled_ns=0,
        issue_ns=0,
        max_event_bytes=1 << 20,
        keep_text=True,
    )
    ex.on_headers(status, 1)
    for data, t in pieces:
        if not ex.on_body(data, t):
            break
    ex.on_message_complete(pieces[-1][1] if pieces else 1)
    return ex


def test_role_only_chunk_is_not_ttft() -> None:
    ex = run(
        [
            (ROLE, 10),
            (chunk("Hel"), 20),
            (chunk("lo"), 35),
            (chunk("!", "stop"), 45),
            (USAGE + DONE, 50),
        ]
    )
    assert ex.failure is Failure.NONE
    assert ex.first_ns == 20  # the first content, not the role chunk at 10
    assert ex.end_ns == 50
    assert ex.chunks == 3
    assert ex.gaps == [15, 10]
    assert ex.usage_output == 3 and ex.usage_input == 7
    assert ex.finish_reason is FinishReason.STOP
    assert ex.first_text == "Hel" and "".join(ex.text_after_first) == "lo!"


@pytest.mark.parametrize(
    "delta",
    [{"reasoning_content": "hmm"}, {"reasoning": "hmm"}, {"tool_calls": [{"index": 0}]}],
)
def test_reasoning_and_tool_calls_start_the_clock(delta: dict[str, object]) -> None:
    ex = run([(ROLE, 5), (chunk(None, **delta), 9), (chunk("x", "stop") + DONE, 12)])
    assert ex.failure is Failure.NONE and ex.first_ns == 9


def test_empty_content_chunks_are_not_useful() -> None:
    ex = run([(chunk(""), 5), (chunk("", "stop") + DONE, 9)])
    assert ex.failure is Failure.EMPTY_RESPONSE


def test_missing_done_is_fine_when_finish_reason_came() -> None:
    ex = run([(chunk("a"), 5), (chunk("b", "length"), 9)])
    assert ex.failure is Failure.NONE and ex.finish_reason is FinishReason.LENGTH


def test_stream_without_finish_reason_is_incomplete() -> None:
    ex = run([(chunk("a"), 5), (chunk("b") + DONE, 9)])
    assert ex.failure is Failure.INCOMPLETE


def test_truncated_stream_connection_lost_is_incomplete() -> None:
    ex = Exchange(
        stream=True,
        scheduled_ns=0,
        issue_ns=0,
        max_event_bytes=1 << 20,
        keep_text=False,
    )
    ex.on_headers(200, 1)
    ex.on_body(chunk("a"), 2)
    ex.on_connection_lost(3)
    assert ex.failure is Failure.INCOMPLETE and ex.end_ns == 3


def test_invalid_json_chunk_is_malformed() -> None:
    ex = run([(chunk("a"), 5), (b"data: {not json\n\n", 6)])
    assert ex.failure is Failure.MALFORMED_STREAM
    assert "invalid chunk" in ex.detail


def test_wrong_shape_is_malformed() -> None:
    ex = run([(b'data: {"choices": 3}\n\n', 6)])
    assert ex.failure is Failure.MALFORMED_STREAM


def test_json_body_instead_of_sse_is_malformed() -> None:
    ex = run([(b'{"choices":[{"message":{"content":"hi"}}]}', 6)])
    assert ex.failure is Failure.MALFORMED_STREAM


def test_empty_body_is_empty_response() -> None:
    ex = run([])
    assert ex.failure is Failure.EMPTY_RESPONSE


def test_oversized_event_is_malformed() -> None:
    ex = Exchange(stream=True, scheduled_ns=0, issue_ns=0, max_event_bytes=1024, keep_text=False)
    ex.on_headers(200, 1)
    assert ex.on_body(b"data: " + b"x" * 4096, 2) is False
    assert ex.failure is Failure.MALFORMED_STREAM


def test_error_object_in_stream_is_server_error() -> None:
    ex = run([(chunk("a"), 5), (b'data: {"error": {"message": "boom"}}\n\n', 6)])
    assert ex.failure is Failure.HTTP_5XX and "boom" in ex.detail


@pytest.mark.parametrize(
    ("status", "failure"),
    [
        (401, Failure.HTTP_4XX),
        (404, Failure.HTTP_4XX),
        (429, Failure.HTTP_429),
        (500, Failure.HTTP_5XX),
        (503, Failure.HTTP_5XX),
        (302, Failure.HTTP_4XX),
    ],
)
def test_status_classes(status: int, failure: Failure) -> None:
    ex = run([(b'{"error": {"message": "nope"}}', 5)], status=status)
    assert ex.failure is failure
    assert ex.detail.startswith(f"HTTP {status}") and "nope" in ex.detail


def test_non_streaming_response() -> None:
    body = json.dumps(
        {
            "choices": [
                {"message": {"role": "assistant", "content": "hi there"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 4, "completion_tokens": 2},
        }
    ).encode()
    ex = run([(body[:10], 5), (body[10:], 7)], stream=False)
    assert ex.failure is Failure.NONE
    assert ex.first_ns == -1 and ex.end_ns == 7
    assert ex.usage_output == 2 and ex.first_text == "hi there"
