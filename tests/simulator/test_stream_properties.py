"""Property tests of the event layout of one streamed response, without a network.

Whatever the token counts, grouping, fault and the order in which tokens are generated,
the events must spell out exactly the reasoning then the content tokens, in groups of
`tokens_per_chunk` (only the last may be short), with the finish reason on the last
token event only, followed by usage (when asked) and [DONE], all inside a valid chunked
HTTP body.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.simulator._stream import Fault, TokenStream


class _Sink:
    def __init__(self) -> None:
        self.data = b""
        self.finished = False
        self.dropped = False

    def write(self, data: bytes) -> None:
        self.data += data

    def finish_response(self) -> None:
        self.finished = True

    def drop_connection(self) -> None:
        self.dropped = True


class _Loop:
    """Records `call_later` so that a stall can be released by hand."""

    def __init__(self) -> None:
        self.pending: list[Any] = []

    def call_later(self, delay: float, callback: Any) -> Any:
        self.pending.append(callback)
        return self

    def cancel(self) -> None:
        pass


def _dechunk(body: bytes) -> tuple[bytes, bool]:
    """Decode a chunked body; return (payload, whether the terminating chunk was seen)."""
    out, rest = b"", body
    while rest:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            assert rest == b"\r\n"
            return out, True
        out += rest[:size]
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]
    return out, False


@settings(max_examples=300, deadline=None)
@given(
    reasoning=st.integers(0, 12),
    content=st.integers(1, 30),
    k=st.integers(1, 8),
    include_usage=st.booleans(),
    fault=st.sampled_from(list(Fault)),
    fault_position=st.floats(0, 0.999),
    steps=st.lists(st.integers(0, 7), min_size=1, max_size=60),
)
def test_event_layout(
    reasoning: int,
    content: int,
    k: int,
    include_usage: bool,
    fault: Fault,
    fault_position: float,
    steps: list[int],
) -> None:
    sink, loop = _Sink(), _Loop()
    stream = TokenStream(
        sink=sink,
        loop=loop,  # type: ignore[arg-type]
        api="chat",
        streamed=True,
        include_usage=include_usage,
        keep_alive=True,
        request_id="chatcmpl-x",
        created=1,
        model="m",
        prompt_tokens=7,
        reasoning_tokens=reasoning,
        content_tokens=content,
        finish_reason="stop",
        tokens_per_chunk=k,
        stamp=False,
        fault=fault,
        fault_position=fault_position,
        stall_s=1.0,
    )
    total = reasoning + content
    stream.flush_head()
    generated = 0
    for step in steps:  # generate tokens in arbitrary increments
        generated = min(total, generated + step)
        stream.advance(generated)
    stream.advance(total)
    while loop.pending:  # release a stall
        loop.pending.pop()()

    head, body = sink.data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    payload, terminated = _dechunk(body)
    assert payload.endswith(b"\n\n") or payload == b""
    events = [e.removeprefix(b"data: ").decode() for e in payload.split(b"\n\n")[:-1]]

    if fault is Fault.DROP:
        assert sink.dropped and not sink.finished and not terminated
        assert "[DONE]" not in events
    else:
        assert sink.finished and terminated
        assert events[-1] == "[DONE]"
    malformed = events.count("{not json")
    assert malformed == (1 if fault is Fault.MALFORMED else 0)
    chunks = [json.loads(e) for e in events if e not in ("[DONE]", "{not json")]
    role, token_chunks = chunks[0], chunks[1:]
    assert role["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    usage = [c for c in token_chunks if not c["choices"]]
    token_chunks = [c for c in token_chunks if c["choices"]]

    thought = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in token_chunks)
    said = "".join(c["choices"][0]["delta"].get("content", "") for c in token_chunks)
    sizes = [
        (len(c["choices"][0]["delta"].get("reasoning_content", "")) // len("think "))
        + (len(c["choices"][0]["delta"].get("content", "")) // len("tok "))
        for c in token_chunks
    ]
    finishes = [c["choices"][0]["finish_reason"] for c in token_chunks]
    if fault is Fault.DROP:
        n_events = -(-total // k)
        # mid-stream: after at least one token event when there are two or more
        assert 1 <= len(token_chunks) < n_events if n_events >= 2 else token_chunks == []
        assert all(f is None for f in finishes)
        assert thought + said == ("think " * reasoning + "tok " * content)[: len(thought + said)]
        return
    assert thought == "think " * reasoning
    assert said == "tok " * content
    assert all(size == k for size in sizes[:-1]) and 1 <= sizes[-1] <= k
    assert finishes == [None] * (len(finishes) - 1) + ["stop"]
    if include_usage:
        assert usage[0]["usage"] == {
            "prompt_tokens": 7,
            "completion_tokens": total,
            "total_tokens": 7 + total,
        }
    else:
        assert usage == []
