"""OpenAI wire format: request bodies out, streamed chunks and full responses in.

Chunks are decoded with msgspec into small typed structs: it validates the shape (a chunk
whose `choices` is not a list is malformed) at a cost of a few µs, and ignores the many
fields we do not use. The one decision that defines TTFT lives here: a chunk is *useful*
when its delta carries non-empty `content`, else non-empty `reasoning_content`/`reasoning`,
else a tool-call delta (DESIGN §5). Role-only and empty-content chunks are not useful.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

ApiFlavour = Literal["chat", "completions"]

ROUTES: dict[str, str] = {"chat": "chat/completions", "completions": "completions"}


class Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[Any] | None = None


class Choice(msgspec.Struct):
    delta: Delta | None = None
    text: str | None = None  # completions API
    finish_reason: str | None = None


class Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class Chunk(msgspec.Struct):
    choices: list[Choice] | None = None
    usage: Usage | None = None
    error: Any = None  # some servers (vLLM) report a failure in band, mid-stream
    # The simulator's own CLOCK_MONOTONIC stamp of the write (`--stamp`); on one host it
    # measures how long bytes waited before the client read them.
    rb_server_ns: int | None = None


class Message(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[Any] | None = None


class FullChoice(msgspec.Struct):
    message: Message | None = None
    text: str | None = None
    finish_reason: str | None = None


class Completion(msgspec.Struct):
    """A non-streamed response (chat.completion or text_completion)."""

    choices: list[FullChoice] | None = None
    usage: Usage | None = None
    error: Any = None


chunk_decoder = msgspec.json.Decoder(Chunk)
completion_decoder = msgspec.json.Decoder(Completion)
_encoder = msgspec.json.Encoder()


def useful_text(choice: Choice) -> str | None:
    """The text that makes a streamed choice useful, '' for a tool-call delta, else None."""
    if choice.text:
        return choice.text
    delta = choice.delta
    if delta is None:
        return None
    if delta.content:
        return delta.content
    if delta.reasoning_content:
        return delta.reasoning_content
    if delta.reasoning:
        return delta.reasoning
    if delta.tool_calls:
        return ""
    return None


def message_text(choice: FullChoice) -> str:
    if choice.text:
        return choice.text
    m = choice.message
    if m is None:
        return ""
    return (m.reasoning_content or m.reasoning or "") + (m.content or "")


def build_body(
    *,
    api: ApiFlavour,
    model: str,
    prompt: str | None,
    messages: list[dict[str, Any]] | None,
    system: str | None,
    max_tokens: int | None,
    stream: bool,
    include_usage: bool,
    temperature: float | None,
    seed: int | None,
    extra: dict[str, Any] | None,
) -> bytes:
    """One request body, serialized once and reused for every send of that sample."""
    body: dict[str, Any] = {"model": model}
    if api == "chat":
        if messages is None:
            messages = []
            if system:
                messages.append({"role": "system", "content": system})
            messages.append({"role": "user", "content": prompt or ""})
        body["messages"] = messages
        if max_tokens is not None:
            # Both spellings: older servers (llama.cpp, TGI) know only max_tokens.
            body["max_tokens"] = max_tokens
            body["max_completion_tokens"] = max_tokens
    else:
        if prompt is None and messages is not None:
            prompt = "\n".join(str(m.get("content", "")) for m in messages)
        body["prompt"] = prompt or ""
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
    body["stream"] = stream
    if stream and include_usage:
        body["stream_options"] = {"include_usage": True}
    if temperature is not None:
        body["temperature"] = temperature
    if seed is not None:
        body["seed"] = seed
    if extra:
        body.update(extra)
    return _encoder.encode(body)
