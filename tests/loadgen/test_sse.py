"""The SSE framer against the ways real servers and networks cut streams."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.loadgen.sse import SSEDecoder, SSEError


def feed_all(pieces: list[bytes], limit: int = 1 << 20) -> list[bytes]:
    dec = SSEDecoder(limit)
    out: list[bytes] = []
    for piece in pieces:
        out.extend(dec.feed(piece))
    return out


def test_plain_events() -> None:
    assert feed_all([b"data: a\n\ndata: b\n\n"]) == [b"a", b"b"]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(eol: bytes) -> None:
    stream = b"data: one" + eol + eol + b"data: two" + eol + eol
    assert feed_all([stream]) == [b"one", b"two"]


def test_crlf_split_between_reads_is_one_line_end() -> None:
    # "data: x\r" | "\n\r\n": the LF completes the CRLF, then CRLF is the blank line.
    assert feed_all([b"data: x\r", b"\n\r\n"]) == [b"x"]
    # and a lone CR at the end of a read followed by a CR: blank line.
    assert feed_all([b"data: y\r", b"\r"]) == [b"y"]


def test_unicode_line_separators_inside_json_do_not_split() -> None:
    text = "a\u2028b\u2029c\x85d\x0ce\x1cf"
    payload = json.dumps({"choices": [{"delta": {"content": text}}]}, ensure_ascii=False)
    raw = b"data: " + payload.encode() + b"\n\n"
    (event,) = feed_all([raw])
    assert json.loads(event)["choices"][0]["delta"]["content"] == text


def test_utf8_sequence_split_across_reads() -> None:
    raw = "data: é€😀\n\n".encode()
    pieces = [raw[i : i + 1] for i in range(len(raw))]
    assert feed_all(pieces) == ["é€😀".encode()]


def test_comments_and_other_fields_are_skipped() -> None:
    raw = b": ping\n\nevent: message\nid: 7\nretry: 10\ndata: x\n\n:keepalive\n\n"
    assert feed_all([raw]) == [b"x"]


def test_multiline_data_joined_with_lf() -> None:
    assert feed_all([b"data: a\ndata: b\ndata\n\n"]) == [b"a\nb\n"]


def test_no_space_after_colon_and_only_one_space_stripped() -> None:
    assert feed_all([b"data:x\n\ndata:  y\n\n"]) == [b"x", b" y"]


def test_event_without_blank_line_is_not_dispatched() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: [DONE]") == []
    assert dec.has_partial_event


def test_oversized_event_raises() -> None:
    dec = SSEDecoder(max_event_bytes=1024)
    with pytest.raises(SSEError):
        dec.feed(b"data: " + b"x" * 2048)
    dec = SSEDecoder(max_event_bytes=1024)
    with pytest.raises(SSEError):  # many lines adding up
        for _ in range(10):
            dec.feed(b"data: " + b"y" * 200 + b"\n")


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=30), max_size=8),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.data(),
)
def test_any_split_gives_the_same_events(
    payloads: list[str], eol: bytes, data: st.DataObject
) -> None:
    raw = b"".join(b"data: " + p.encode() + eol + eol for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=10)))
    pieces, last = [], 0
    for c in [*cuts, len(raw)]:
        pieces.append(raw[last:c])
        last = c
    assert feed_all(pieces) == [p.encode() for p in payloads]
