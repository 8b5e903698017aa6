"""The h11 sender's response parser: one HTTP/1.1 response at a time, from the bytes read so far.

Why not ``h11.Connection`` (which parsed responses here before): a pure-Python state machine
that checks every event against both peers' states costs ~180 µs of CPU per small JSON
response and ~300 µs per streamed one — on trio, most of the gap to aiohttp's C parser.  A
client reading the answers to its own POSTs needs less: a head (status line and headers), then
a body framed by ``transfer-encoding: chunked``, ``content-length`` or the end of the
connection (RFC 9112 §6.3), read with ``bytes.find`` and slices.  What h11 refused, this
refuses too (:class:`ProtocolError`, which the connection raises as httpx's
``RemoteProtocolError``): a malformed status line or header line, a control character in a
header, a ``content-length`` that is not one number, a transfer coding other than ``chunked``,
a malformed chunk, a head or chunk-size line past its size limit, and an end of stream before
the message ends.  Leniencies kept from h11: bare ``\\n`` line ends and folded header lines.

:meth:`ResponseParser.next_event` gives a :class:`Head`, then body bytes, then :data:`END`;
``None`` when it needs more bytes.  1xx heads are skipped (they announce, they do not answer).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["END", "Head", "ProtocolError", "ResponseParser"]

#: The end of the response's body (returned once).
END: Final = b""

# A status line and headers: httpcore's limit (its h11's ``max_incomplete_event_size``), so a head the httpx sender
# reads this one reads too (docs/wire.md: the senders behave alike).  It only bounds a head still unended.
_MAX_HEAD: Final = 100 * 1024
_MAX_SIZE_LINE: Final = 1024  # a chunk-size line, extensions included
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_STATUS = re.compile(rb"HTTP/(\d)\.(\d) ([0-9]{3})(?: ([^\x00-\x08\x0a-\x1f\x7f]*))?")
_HEADER = re.compile(rb"([-!#$%&'*+.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")

# Parser states: where in the response the next bytes belong.
_HEAD: Final = 0
_LENGTH: Final = 1  # content-length body: ``_remaining`` bytes left
_CHUNK_SIZE: Final = 2  # a chunk-size line
_CHUNK_DATA: Final = 3  # inside a chunk: ``_remaining`` bytes left, then its CRLF
_CHUNK_END: Final = 4  # the CRLF after a chunk's data
_TRAILERS: Final = 5  # trailer lines up to the blank one (read, not kept: no vendor sends them)
_UNTIL_CLOSE: Final = 6  # no framing: the body ends with the connection
_DONE: Final = 7


class ProtocolError(Exception):
    """The server broke HTTP/1.1 (or closed the connection before the response ended)."""


class Head:
    """A response's status line and headers (names in lower case, values as sent, in order)."""

    __slots__ = ("headers", "http_version", "reason", "status_code")

    def __init__(
        self, status_code: int, reason: bytes, http_version: bytes, headers: list[tuple[bytes, bytes]]
    ) -> None:
        self.status_code = status_code
        self.reason = reason
        self.http_version = http_version
        self.headers = headers


class ResponseParser:
    """Parses the responses on one connection, one after the other (see the module docstring).

    ``keep_alive`` says, once a response ended, whether the connection may carry another
    request: HTTP/1.1, no ``connection: close``, a framed body, and nothing sent after it.
    """

    __slots__ = ("_buffer", "_eof", "_position", "_remaining", "_searched", "_state", "keep_alive")

    def __init__(self) -> None:
        self._buffer = b""
        self._position = 0  # the bytes before it in ``_buffer`` are parsed
        self._state = _HEAD
        self._remaining = 0
        self._searched = 0  # bytes of an unfinished head (from ``_position``) already searched for its end
        self._eof = False
        self.keep_alive = True

    @property
    def idle(self) -> bool:
        """Between responses, nothing unread: the connection can take a request."""
        return self._state == _HEAD and self._position == len(self._buffer) and not self._eof

    @property
    def done(self) -> bool:
        """The response ended (its body read to the end)."""
        return self._state == _DONE

    @property
    def reusable(self) -> bool:
        """The response ended cleanly and the connection may carry the next request."""
        return self._state == _DONE and self.keep_alive and not self._eof and self._position == len(self._buffer)

    def start_next(self) -> None:
        """Make ready for the next response on the same connection (after :attr:`reusable`)."""
        self._buffer = b""
        self._position = 0
        self._searched = 0
        self._state = _HEAD

    def receive(self, data: bytes) -> None:
        """Add bytes read from the connection; ``b""`` is its end."""
        if not data:
            self._eof = True
        elif self._position == len(self._buffer):
            self._buffer, self._position = data, 0
        else:
            self._buffer, self._position = self._buffer[self._position :] + data, 0

    def next_event(self) -> Head | bytes | None:
        """The next part of the response the bytes hold (see the module docstring); ``None``: more needed."""
        state = self._state
        if state in (_LENGTH, _UNTIL_CLOSE):
            return self._framed_data()
        if state == _HEAD:
            return self._head()
        if state == _DONE:
            return END
        return self._chunked()

    # --- the head ---------------------------------------------------------------------------

    def _head(self) -> Head | bytes | None:
        while True:
            buffer, start = self._buffer, self._position
            # Resume where the last search stopped (less the 3 bytes a head end can span): a server sending
            # its head a byte per read would otherwise have the whole head rescanned for every byte.
            found = _HEAD_END.search(buffer, start + max(0, self._searched - 3))
            if found is None:
                if len(buffer) - start > _MAX_HEAD:
                    raise ProtocolError(f"the response head is longer than {_MAX_HEAD} bytes")
                if self._eof:
                    raise ProtocolError("the server closed the connection before the response ended")
                self._searched = len(buffer) - start
                return None
            self._searched = 0
            if found.start() - start > _MAX_HEAD:
                raise ProtocolError(f"the response head is longer than {_MAX_HEAD} bytes")
            self._position = found.end()
            head = _parse_head(buffer[start : found.start()])
            if 100 <= head.status_code < 200:
                if head.status_code == 101:
                    raise ProtocolError("the server switched protocols, which was not asked for")
                continue  # 100 Continue, 103 Early Hints: the answer comes after
            self._frame(head)
            return head

    def _frame(self, head: Head) -> None:
        """Choose how the body ends (RFC 9112 §6.3) and whether the connection outlives it."""
        connection: list[bytes] = []
        codings: list[bytes] = []
        lengths: list[bytes] = []
        for name, value in head.headers:
            if name == b"connection":
                connection.extend(_tokens(value))
            elif name == b"transfer-encoding":
                codings.extend(_tokens(value))
            elif name == b"content-length":
                lengths.extend(part.strip() for part in value.split(b","))
        self.keep_alive = head.http_version == b"1.1" and b"close" not in connection
        if head.status_code in (204, 304):
            self._state = _DONE
        elif codings:
            if codings != [b"chunked"]:
                raise ProtocolError(f"unsupported transfer-encoding: {b', '.join(codings)[:60]!r}")
            self._state = _CHUNK_SIZE
        elif lengths:
            if len(set(lengths)) != 1 or not lengths[0].isdigit() or len(lengths[0]) > 18:
                raise ProtocolError(f"a bad content-length: {b', '.join(lengths)[:60]!r}")
            self._remaining = int(lengths[0])
            self._state = _LENGTH if self._remaining else _DONE
        else:
            self._state = _UNTIL_CLOSE
            self.keep_alive = False

    # --- bodies -----------------------------------------------------------------------------

    def _framed_data(self) -> bytes | None:
        """Body bytes of a ``content-length`` body or one read to the end of the connection."""
        buffer, start = self._buffer, self._position
        available = len(buffer) - start
        if self._state == _UNTIL_CLOSE:
            if available:
                self._position = len(buffer)
                return buffer[start:] if start else buffer
            if self._eof:
                self._state = _DONE
                return END
            self._drop_parsed()
            return None
        if available:
            take = min(available, self._remaining)
            self._position = start + take
            self._remaining -= take
            if not self._remaining:
                self._state = _DONE  # the END comes on the next call
            return buffer if take == len(buffer) else buffer[start : start + take]
        if self._eof:
            raise ProtocolError(f"the server closed the connection with {self._remaining} body bytes unsent")
        self._drop_parsed()
        return None

    def _chunked(self) -> bytes | None:
        """The data of the chunks in the buffer, joined; ``END`` after the last chunk; ``None``: more needed."""
        parts: list[bytes] = []
        while True:
            step = self._chunk_step()
            if step is None:
                break
            if step:
                parts.append(step)
            elif self._state == _DONE:
                if parts:
                    break  # END on the next call
                return END
        if parts:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        if self._eof:
            raise ProtocolError("the server closed the connection in the middle of a chunked body")
        self._drop_parsed()
        return None

    def _drop_parsed(self) -> None:
        """Before answering "more bytes needed": drop the buffer if every byte of it was parsed.

        A stream waits for its next bytes between deltas, seconds apart: the last read's, already
        handed up, need not be held that long (W12: ~0.7 KB a live stream).
        """
        if self._position == len(self._buffer):
            self._buffer, self._position = b"", 0

    def _chunk_step(self) -> bytes | None:
        """One step through a chunked body: data (maybe empty), or ``None`` when the buffer ran out."""
        buffer, start, state = self._buffer, self._position, self._state
        if state == _CHUNK_DATA:
            available = len(buffer) - start
            if not available:
                return None
            take = min(available, self._remaining)
            self._position = start + take
            self._remaining -= take
            if not self._remaining:
                self._state = _CHUNK_END
            return buffer[start : start + take]
        if state == _DONE:
            return END
        line = self._line(start)
        if line is None:
            return None
        if state == _CHUNK_SIZE:
            found = _SIZE.fullmatch(line)
            if found is None:
                raise ProtocolError(f"a bad chunk-size line ({len(line)} bytes)")
            self._remaining = int(found.group(1), 16)
            self._state = _CHUNK_DATA if self._remaining else _TRAILERS
        elif state == _CHUNK_END:
            if line:
                raise ProtocolError("a chunk longer than its size")
            self._state = _CHUNK_SIZE
        elif not line:  # _TRAILERS: the blank line ends the message
            self._state = _DONE
        elif _CONTROL.search(line) or b":" not in line:
            raise ProtocolError("a malformed trailer line")
        return b""

    def _line(self, start: int) -> bytes | None:
        """The next line (without its end), consumed; ``None`` if it is not all here yet."""
        buffer = self._buffer
        end = buffer.find(b"\n", start)
        if end < 0:
            if len(buffer) - start > _MAX_SIZE_LINE:
                raise ProtocolError("a chunk-size or trailer line too long")
            return None
        self._position = end + 1
        return buffer[start : end - 1] if end > start and buffer[end - 1] == 13 else buffer[start:end]


def _tokens(value: bytes) -> list[bytes]:
    return [token.strip().lower() for token in value.split(b",") if token.strip()]


def _parse_head(block: bytes) -> Head:
    """A status line and its headers, with line ends and folds as h11 accepted them."""
    if _CONTROL.search(block):
        raise ProtocolError("a control character in the response head")
    block = block.replace(b"\r\n", b"\n")
    if b"\r" in block:
        raise ProtocolError("a bare carriage return in the response head")
    lines = block.split(b"\n")
    status = _STATUS.fullmatch(lines[0])
    if status is None:
        raise ProtocolError(f"a malformed status line ({len(lines[0])} bytes)")
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):  # obs-fold: a continuation of the previous value
            if not headers:
                raise ProtocolError("a folded line before any header")
            name, value = headers[-1]
            headers[-1] = (name, value + b" " + line.strip(b" \t"))
            continue
        found = _HEADER.fullmatch(line)
        if found is None:
            raise ProtocolError(f"a malformed header line ({len(line)} bytes)")
        headers.append((found.group(1).lower(), found.group(2)))
    version = status.group(1) + b"." + status.group(2)
    return Head(int(status.group(3)), status.group(4) or b"", version, headers)
