"""OpenAI wire format on the server side: request bodies in, response bytes out.

Requests are decoded with msgspec into small typed structs, so a malformed body becomes a
400 whose message names the field (`Expected int >= 1 - at $.max_tokens`), never a
traceback; unknown fields are ignored, as real servers do. Prompt tokens are counted as
whitespace-separated words of every message's text (text parts of multi-part content
included), or of the completion prompt; a prompt given as token ids counts its ids. This
is a deliberate, documented stand-in for a tokenizer: cheap and exactly predictable.

Responses are built as bytes. Streamed chunks are the hot path, so a chunk is assembled
from a per-request head (id, object, created, model) and a delta tail taken from a small
server-wide cache keyed by (API, reasoning tokens, content tokens, finish reason); writing
one chunk costs a few concatenations and no JSON encoding.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

Api = Literal["chat", "completions"]

CONTENT_WORD: Final = "tok "
REASONING_WORD: Final = "think "

_encode = msgspec.json.encode

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]


class ContentPart(msgspec.Struct):
    type: str = "text"
    text: str | None = None


class ChatMessage(msgspec.Struct):
    role: str
    content: str | list[ContentPart] | None = None


class StreamOptions(msgspec.Struct):
    include_usage: bool | None = None


class ChatRequest(msgspec.Struct):
    messages: list[ChatMessage]
    model: str | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: PositiveInt | None = None
    max_completion_tokens: PositiveInt | None = None
    n: PositiveInt | None = None


class CompletionRequest(msgspec.Struct):
    prompt: str | list[str | int | list[int]]
    model: str | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: PositiveInt | None = None
    n: PositiveInt | None = None


_chat_decoder: Final = msgspec.json.Decoder(ChatRequest)
_completion_decoder: Final = msgspec.json.Decoder(CompletionRequest)


class RequestError(Exception):
    """A request the simulator refuses; carries the HTTP status and an OpenAI error body."""

    def __init__(self, status: int, message: str, *, kind: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(message, kind=kind, code=code)


class GenerationRequest(msgspec.Struct):
    """What the simulator needs from a decoded chat or completions request."""

    api: Api
    model: str | None
    stream: bool
    include_usage: bool
    max_tokens: int | None
    prompt_tokens: int


def _words(text: str | None) -> int:
    return len(text.split()) if text else 0


def _bad_request(message: str) -> RequestError:
    return RequestError(400, message, kind="invalid_request_error")


def parse_generation(api: Api, body: bytes) -> GenerationRequest:
    """Decode and check a request body; raise `RequestError` (400) when it is not usable."""
    try:
        if api == "chat":
            chat = _chat_decoder.decode(body)
        else:
            completion = _completion_decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise _bad_request(f"Invalid request: {exc}") from None
    except msgspec.DecodeError as exc:
        raise _bad_request(f"Request body is not valid JSON: {exc}") from None
    if api == "chat":
        if not chat.messages:
            raise _bad_request("`messages` must contain at least one message")
        if chat.n not in (None, 1):
            raise _bad_request("the simulator supports only n = 1")
        prompt_tokens = 0
        for message in chat.messages:
            content = message.content
            if isinstance(content, str):
                prompt_tokens += _words(content)
            elif content is not None:
                prompt_tokens += sum(_words(part.text) for part in content)
        stream = bool(chat.stream)
        options = chat.stream_options
        max_tokens = chat.max_completion_tokens or chat.max_tokens
        model = chat.model
    else:
        if completion.n not in (None, 1):
            raise _bad_request("the simulator supports only n = 1")
        prompt_tokens = _prompt_tokens(completion.prompt)
        stream = bool(completion.stream)
        options = completion.stream_options
        max_tokens = completion.max_tokens
        model = completion.model
    return GenerationRequest(
        api=api,
        model=model,
        stream=stream,
        include_usage=stream and options is not None and bool(options.include_usage),
        max_tokens=max_tokens,
        prompt_tokens=prompt_tokens,
    )


def _prompt_tokens(prompt: str | list[str | int | list[int]]) -> int:
    if isinstance(prompt, str):
        return _words(prompt)
    if all(isinstance(item, int) for item in prompt):
        return len(prompt)  # one prompt given as token ids
    if len(prompt) != 1:
        raise _bad_request("the simulator supports exactly one prompt per request")
    (only,) = prompt
    return _words(only) if isinstance(only, str) else len(only) if isinstance(only, list) else 1


def error_body(message: str, *, kind: str, code: str | None = None) -> bytes:
    """An OpenAI-style error object: {"error": {"message", "type", "param", "code"}}."""
    return _encode({"error": {"message": message, "type": kind, "param": None, "code": code}})


_REASONS: Final = {
    200: b"OK",
    400: b"Bad Request",
    401: b"Unauthorized",
    404: b"Not Found",
    405: b"Method Not Allowed",
    413: b"Content Too Large",
    429: b"Too Many Requests",
    431: b"Request Header Fields Too Large",
    500: b"Internal Server Error",
}


def json_response(status: int, body: bytes, *, keep_alive: bool) -> bytes:
    """A complete HTTP/1.1 response with a Content-Length JSON body."""
    return b"".join(
        (
            b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            % (status, _REASONS.get(status, b"Unknown"), len(body)),
            b"" if keep_alive else b"Connection: close\r\n",
            b"\r\n",
            body,
        )
    )


STREAM_HEAD_KEEP_ALIVE: Final = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
STREAM_HEAD_CLOSE: Final = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
)
DONE_EVENT: Final = b"data: [DONE]\n\n"
MALFORMED_EVENT: Final = b"data: {not json\n\n"
LAST_HTTP_CHUNK: Final = b"0\r\n\r\n"


def http_chunk(payload: bytes) -> bytes:
    """Frame `payload` as one HTTP/1.1 chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


_TailKey = tuple[Api, int, int, str | None]
_tail_cache: dict[_TailKey, bytes] = {}
_TAIL_CACHE_LIMIT: Final = 4096


def _delta_tail(api: Api, reasoning: int, content: int, finish: str | None) -> bytes:
    """Everything after a chunk's head: the delta (or text) and the finish reason."""
    key = (api, reasoning, content, finish)
    tail = _tail_cache.get(key)
    if tail is not None:
        return tail
    finish_json = _encode(finish)
    if api == "chat":
        delta: dict[str, str] = {}
        if reasoning:
            delta["reasoning_content"] = REASONING_WORD * reasoning
        if content or not reasoning:
            delta["content"] = CONTENT_WORD * content
        tail = b'%s,"logprobs":null,"finish_reason":%s}]}' % (_encode(delta), finish_json)
    else:
        text = _encode(CONTENT_WORD * content)
        tail = b'%s,"logprobs":null,"finish_reason":%s}]}' % (text, finish_json)
    if len(_tail_cache) >= _TAIL_CACHE_LIMIT:
        _tail_cache.clear()
    _tail_cache[key] = tail
    return tail


class ChunkWriter:
    """Builds the SSE events of one streamed response (without the HTTP chunk framing).

    A JSON chunk is `{` + optional stamp + head + tail: the head (id, object, created,
    model and the opening of the first choice) is fixed per request, the tail comes from
    the shared cache. `stamp_ns` is inserted first so that no field has to be rewritten.
    """

    __slots__ = ("_api", "_head", "_ids")

    def __init__(self, api: Api, request_id: str, created: int, model: str) -> None:
        self._api: Api = api
        self._ids = b'"id":%s,"object":%s,"created":%d,"model":%s' % (
            _encode(request_id),
            b'"chat.completion.chunk"' if api == "chat" else b'"text_completion"',
            created,
            _encode(model),
        )
        self._head = self._ids + (
            b',"choices":[{"index":0,"delta":'
            if api == "chat"
            else b',"choices":[{"index":0,"text":'
        )

    @staticmethod
    def _event(body: bytes, stamp_ns: int | None) -> bytes:
        if stamp_ns is None:
            return b"data: {%s\n\n" % body
        return b'data: {"rb_server_ns":%d,%s\n\n' % (stamp_ns, body)

    def role(self, stamp_ns: int | None) -> bytes:
        """The first chat event: role only, empty content, no finish reason."""
        body = (
            self._head
            + b'{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}'
        )
        return self._event(body, stamp_ns)

    def tokens(
        self, reasoning: int, content: int, finish: str | None, stamp_ns: int | None
    ) -> bytes:
        """An event carrying `reasoning` + `content` tokens, with `finish` if it is the last."""
        return self._event(
            self._head + _delta_tail(self._api, reasoning, content, finish), stamp_ns
        )

    def usage(self, prompt_tokens: int, completion_tokens: int, stamp_ns: int | None) -> bytes:
        """The final usage-only event (`choices: []`), sent when include_usage was asked."""
        body = (
            b'%s,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}'
            % (
                self._ids,
                prompt_tokens,
                completion_tokens,
                prompt_tokens + completion_tokens,
            )
        )
        return self._event(body, stamp_ns)


def completion_body(
    *,
    api: Api,
    request_id: str,
    created: int,
    model: str,
    reasoning_tokens: int,
    content_tokens: int,
    finish_reason: str,
    prompt_tokens: int,
) -> bytes:
    """The JSON body of a non-streamed chat.completion or text_completion."""
    choice: dict[str, object] = {"index": 0}
    if api == "chat":
        message: dict[str, str] = {"role": "assistant", "content": CONTENT_WORD * content_tokens}
        if reasoning_tokens:
            message["reasoning_content"] = REASONING_WORD * reasoning_tokens
        choice["message"] = message
    else:
        choice["text"] = CONTENT_WORD * content_tokens
    choice["logprobs"] = None
    choice["finish_reason"] = finish_reason
    completion_tokens = reasoning_tokens + content_tokens
    return _encode(
        {
            "id": request_id,
            "object": "chat.completion" if api == "chat" else "text_completion",
            "created": created,
            "model": model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )
