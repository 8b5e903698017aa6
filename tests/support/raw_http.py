"""Reading HTTP/1.1 requests off a raw byte stream, for the tests' hand-written servers (the ones whose point is
to answer in ways no framework would: headers of their choosing, closes, trickles)."""

from __future__ import annotations

import re

import anyio.abc

__all__ = ["read_request"]


async def read_request(stream: anyio.abc.ByteStream, buffer: bytes) -> tuple[bytes, bytes, bytes]:
    """The next request on ``stream``: ``(head, body, rest)`` — its head without the blank line after it, its body
    (``Content-Length`` bytes; none without the header) and the bytes read past it (give them to the next call as
    ``buffer``, with which this one starts: a keep-alive client may have sent the next request already).

    :raises anyio.EndOfStream: the client closed the connection.
    """
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive()
    head, _, buffer = buffer.partition(b"\r\n\r\n")
    found = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
    length = int(found.group(1)) if found else 0
    while len(buffer) < length:
        buffer += await stream.receive()
    return head, buffer[:length], buffer[length:]
