"""Server-sent events from raw bytes, with a bound on every line and every event.

Lines are split here (WHATWG: ``\\r\\n``, ``\\r`` or ``\\n``), each one checked against
``max_line_bytes`` *while it is still incomplete* — a line that never ends is refused once it
is too long, instead of being buffered without limit — and then handed to httpx-sse's
``SSEDecoder``, which interprets fields exactly as the spec says (the library chose a
maintained decoder over a hand-written one; only the framing around it is ours, because
httpx-sse's own reader has no bound).  The data of one event is bounded by
``max_event_bytes``.

No I/O: :class:`SSEReader` is fed byte chunks by the provider.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

__all__ = ["SSEReader", "iter_events"]

_BOM = "\ufeff"


class SSEReader:
    """Turns byte chunks into ``(event, data)`` pairs, one per dispatched event with data.

    An event without a name is ``"message"``; an event whose data is empty is not
    dispatched (WHATWG).  ``overflow(limit_name, limit, what)`` builds the exception
    raised when a line or an event goes past its bound.
    """

    def __init__(
        self,
        *,
        max_line_bytes: int,
        max_event_bytes: int,
        overflow: Callable[[str, int, str], Exception],
    ) -> None:
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self._overflow = overflow
        # Imported by the first stream, not with the package: httpx_sse imports httpx (~0.1 s of `import agentactors`).
        from httpx_sse._decoders import SSEDecoder

        self._decoder = SSEDecoder()
        self._partial: list[bytes] = []  # the current line's pieces, not yet terminated
        self._partial_len = 0
        self._trailing_cr = False
        self._event_bytes = 0
        self._first_line = True

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """The events completed by ``chunk``."""
        if not chunk:
            return []
        if self._trailing_cr:
            # A "\r" ended the last chunk: a "\n" opening this one belongs to the same line break.
            self._trailing_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                self._trailing_cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        rest = lines.pop()  # the piece after the last line break: not a line yet
        out: list[tuple[str, str]] = []
        for line in lines:
            if self._partial:
                self._partial.append(line)
                line = b"".join(self._partial)
                self._partial.clear()
                self._partial_len = 0
            self._line(line, out)
        if rest:
            self._partial.append(rest)
            self._partial_len += len(rest)
            if self._partial_len > self._max_line:
                raise self._overflow("max_sse_line_bytes", self._max_line, "an SSE line")
        return out

    def close(self) -> list[tuple[str, str]]:
        """At the end of the body: an unterminated last line is still a line (as in httpx-sse)."""
        out: list[tuple[str, str]] = []
        if self._partial:
            line = b"".join(self._partial)
            self._partial.clear()
            self._partial_len = 0
            self._line(line, out)
        return out

    def _line(self, raw: bytes, out: list[tuple[str, str]]) -> None:
        if len(raw) > self._max_line:
            raise self._overflow("max_sse_line_bytes", self._max_line, "an SSE line")
        line = raw.decode("utf-8", "replace")
        if self._first_line:
            self._first_line = False
            if line.startswith(_BOM):
                line = line[1:]
        if line:
            self._event_bytes += len(raw)
            if self._event_bytes > self._max_event:
                raise self._overflow("max_event_bytes", self._max_event, "an SSE event")
        else:
            self._event_bytes = 0
        sse = self._decoder.decode(line)
        if sse is not None and sse.data:
            out.append((sse.event or "message", sse.data))


def iter_events(raw: bytes, *, max_line_bytes: int, max_event_bytes: int) -> Iterator[tuple[str, str]]:
    """Every ``(event, data)`` pair in a complete body, through the same reader as a live stream."""

    def overflow(limit_name: str, limit: int, what: str) -> Exception:
        return ValueError(f"{what} went past {limit_name}={limit} bytes")

    reader = SSEReader(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes, overflow=overflow)
    yield from reader.feed(raw)
    yield from reader.close()
