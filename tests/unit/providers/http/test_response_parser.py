"""The h11 sender's response parser: bodies framed as h11 framed them, in any split, and what it refuses."""

from __future__ import annotations

import random

import h11
import pytest

from agentactors.providers.http._response_parser import END, Head, ProtocolError, ResponseParser


def chunked(*parts: bytes, trailer: bytes = b"") -> bytes:
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in parts)
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + body + b"0\r\n" + trailer + b"\r\n"


VALID = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n" + b'{"ok": true}',
    b"HTTP/1.1 200 \r\ncontent-length: 2\r\nX-Empty:\r\n\r\n{}",  # an empty reason, an empty value
    chunked(b"data: 1\n\n", b"data: [DONE]\n\n"),
    chunked(b"a" * 300, trailer=b"x-trailer: yes\r\n"),
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 3\r\n\r\nabc",
    b"HTTP/1.1 204 No Content\r\nx-request-id: r1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nx-folded: one\r\n two\r\ncontent-length: 1\r\n\r\nz",
    b"HTTP/1.1 200 OK\ncontent-length: 1\n\nz",  # bare LF line ends, as h11 accepted
    b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n",
]


def parse(data: bytes, pieces: list[bytes] | None = None, *, eof: bool = False) -> tuple[Head, bytes, ResponseParser]:
    """``data`` fed in ``pieces`` (default: whole); the head, the body, and the parser at the end."""
    parser = ResponseParser()
    head: Head | None = None
    body: list[bytes] = []
    feed = [*(pieces if pieces is not None else [data]), *([b""] if eof else [])]
    for piece in feed:
        parser.receive(piece)
        while (event := parser.next_event()) is not None:
            if isinstance(event, Head):
                head = event
            elif event is END or not event:
                assert head is not None
                return head, b"".join(body), parser
            else:
                body.append(event)
    raise AssertionError("the response did not end")


def by_h11(
    data: bytes, *, eof: bool = False, head_limit: int = 16 * 1024  # h11's default
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """What h11 made of the same bytes: status, headers, body, and whether the connection is reusable."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=head_limit)
    conn.send(h11.Request(method="POST", target="/", headers=[("host", "h"), ("content-length", "0")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    if eof:
        conn.receive_data(b"")
    status, headers, body = 0, [], b""
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Response):
            status, headers = event.status_code, list(event.headers)
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return status, headers, body, conn.our_state is h11.DONE and conn.their_state is h11.DONE
        elif not isinstance(event, h11.InformationalResponse):
            raise AssertionError(event)


def random_split(data: bytes, rng: random.Random) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 8))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@pytest.mark.parametrize("data", VALID)
def test_a_valid_response_reads_as_h11_read_it_however_it_is_split(data: bytes) -> None:
    status, headers, body, _ = by_h11(data)
    rng = random.Random(data)
    splits = [None, [data[i : i + 1] for i in range(len(data))]] + [random_split(data, rng) for _ in range(20)]
    for pieces in splits:
        head, got, parser = parse(data, pieces)
        assert (head.status_code, head.headers, got) == (status, headers, body)
        assert parser.reusable  # HTTP/1.1, framed, nothing after it


def test_one_connection_parses_response_after_response() -> None:
    parser = ResponseParser()
    for data in VALID:
        parser.receive(data)
        events = []
        while (event := parser.next_event()) != END:
            assert event is not None
            events.append(event)
        assert isinstance(events[0], Head) and parser.reusable
        parser.start_next()
        assert parser.idle


def test_a_body_until_the_close_ends_with_the_stream_and_the_connection_is_not_reused() -> None:
    data = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it"
    head, body, parser = parse(data, [data[:30], data[30:]], eof=True)
    assert (head.status_code, body) == (200, b"all of it") == by_h11(data, eof=True)[::2]
    assert parser.done and not parser.reusable


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\ncontent-length: 2\r\n\r\n{}",
        b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}extra",  # bytes after the response: not clean
    ],
)
def test_a_connection_the_response_closes_or_dirties_is_not_reused(data: bytes) -> None:
    head, body, parser = parse(data)
    assert (head.status_code, body) == (200, b"{}")
    assert parser.done and not parser.reusable


def test_the_end_of_a_body_is_known_with_its_last_bytes() -> None:
    parser = ResponseParser()
    parser.receive(chunked(b"last"))
    assert isinstance(parser.next_event(), Head)
    assert parser.next_event() == b"last" and parser.done  # the caller can release before asking again
    assert parser.next_event() == END


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"HTTP/1.1 OK\r\n\r\n", "status line"),
        (b"ICY 200 OK\r\n\r\n", "status line"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header line"),
        (b"HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n", "header line"),
        (b"HTTP/1.1 200 OK\r\nx: a\x00b\r\n\r\n", "control character"),
        (b"HTTP/1.1 200 OK\r\nx: a\rb\r\n\r\n", "carriage return"),
        (b"HTTP/1.1 200 OK\r\n folded: first\r\n\r\n", "folded"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2, 3\r\n\r\n{}", "content-length"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}", "content-length"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: -2\r\n\r\n{}", "content-length"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n", "transfer-encoding"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "chunk-size"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", "longer than its size"),
        (b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n", "switched protocols"),
        (b"HTTP/1.1 200 OK\r\n" + b"x-big: " + b"a" * (110 * 1024), "longer than"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + b"1" * (20 * 1024), "too long"),
    ],
)
def test_a_malformed_response_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        parse(data)
    with pytest.raises(h11.RemoteProtocolError):  # h11 refused these too (its head limit is smaller)
        by_h11(data)


HTTPCORE_HEAD_LIMIT = 100 * 1024  # httpcore's h11 limit (MAX_INCOMPLETE_EVENT_SIZE): the httpx sender's


@pytest.mark.parametrize("size", [70 * 1024, HTTPCORE_HEAD_LIMIT - 64])
def test_a_head_as_long_as_the_httpx_sender_takes_is_read(size: int) -> None:
    """docs/wire.md: every sender behaves alike, and the httpx one (httpcore) reads a head of up to 100 KiB.

    (h11 bounds only a head still unended, so where httpcore's reads happen to fall it may take a little more;
    this parser refuses any head past the limit, the same answer however the bytes arrive.)
    """
    data = b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * size + b"\r\ncontent-length: 2\r\n\r\n{}"
    head, body, _ = parse(data)
    assert (head.status_code, len(head.headers[0][1]), body) == (200, size, b"{}")
    assert by_h11(data, head_limit=HTTPCORE_HEAD_LIMIT)[2] == b"{}"
    with pytest.raises(ProtocolError, match="longer than"):
        parse(data.replace(b"a" * size, b"a" * HTTPCORE_HEAD_LIMIT))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"HTTP/1.1 200 OK\r\ncontent-",
        b'HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\n{"ok"',
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nab\r\n",
    ],
)
def test_an_end_of_stream_before_the_response_ends_is_refused(data: bytes) -> None:
    parser = ResponseParser()
    parser.receive(data)
    with pytest.raises(ProtocolError, match="closed the connection"):
        while parser.next_event() is not None:
            pass
        parser.receive(b"")
        while parser.next_event() != END:
            pass


def test_a_refusal_does_not_repeat_what_the_server_sent() -> None:
    echoed = b"HTTP/1.1 200 OK\r\nauthorization Bearer sk-live-secret-1234\r\n\r\n"  # a broken echo of a header
    with pytest.raises(ProtocolError) as caught:
        parse(echoed)
    assert "sk-live" not in str(caught.value) and "header line" in str(caught.value)


@pytest.mark.parametrize("framing", ["chunked", "content-length", "until close"])
def test_bytes_handed_up_are_not_held_while_the_parser_waits_for_more(framing: str) -> None:
    """A stream waits for its next bytes between deltas, seconds apart: the last read must not stay alive."""
    import sys

    heads = {
        "chunked": b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
        "content-length": b"HTTP/1.1 200 OK\r\ncontent-length: 10000\r\n\r\n",
        "until close": b"HTTP/1.1 200 OK\r\n\r\n",
    }
    parser = ResponseParser()
    parser.receive(heads[framing])
    assert isinstance(parser.next_event(), Head)
    payload = b"data: %s\n\n" % (b"x" * 500)
    read = b"%x\r\n%s\r\n" % (len(payload), payload) if framing == "chunked" else payload
    read = bytes(bytearray(read))  # a fresh object, referenced only here
    before = sys.getrefcount(read)
    parser.receive(read)
    got = []
    while (event := parser.next_event()) is not None:
        got.append(event)
    assert b"".join(e for e in got if isinstance(e, bytes)) == payload
    del got
    assert sys.getrefcount(read) == before  # the parser dropped it once every byte was handed up
