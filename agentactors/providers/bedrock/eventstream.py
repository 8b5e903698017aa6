"""The AWS event-stream framing of ConverseStream, read by botocore's maintained parser.

A ConverseStream body (``application/vnd.amazon.eventstream``) is binary: messages of
``[total length][headers length][prelude CRC][headers][payload][message CRC]``.  The framing is not
ours to re-implement — :class:`botocore.eventstream.EventStreamBuffer` is what every AWS SDK for Python
reads it with (CRC checks, header and payload bounds) — so :class:`EventStreamFramer` only feeds it the
body's chunks as they arrive and hands each message on as the ``(event, data)`` pair
:class:`~agentactors.providers.codec.StreamDecoder` takes:

* ``:message-type: event`` → ``(:event-type, payload)``;
* ``:message-type: exception`` → ``("exception:" + :exception-type, payload)`` (the decoder raises it);
* ``:message-type: error`` → ``("exception:" + :error-code, {"message": :error-message})``.

A message botocore refuses (a bad checksum, a length past its bounds) and bytes left over when the body
ends (a message cut in two) are a transient :class:`~agentactors.MalformedResponseError`.  So is a frame
botocore's parser chokes on without a ``ParserError`` of its own: the bytes are the vendor's, and a prelude
whose CRCs check out can still claim a length shorter than the prelude itself (``struct.error``) or a header
of an unknown type (``KeyError``) — a corrupt stream, never the request's fault.

A message larger than ``max_event_bytes`` (the provider's limit on one event, as for SSE) is a
:class:`~agentactors.ResponseTooLargeError`, raised as soon as its prelude says so (its total length, once
botocore has checked the prelude's CRC) — never after waiting for the bytes it claims, which a lying prelude
would have the stream wait for until the read timed out — or as soon as the bytes of one unfinished message
pass the limit: botocore alone would buffer up to its own 24 MiB bound (past it, a corrupt stream).  botocore is
imported when the first stream starts (the ``[bedrock]`` extra).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

from ..._extras import import_extra
from ...errors import MalformedResponseError, ProviderError
from .stream import EXCEPTION_PREFIX

__all__ = ["EventStreamFramer", "iter_messages"]


def _eventstream() -> Any:
    return import_extra("botocore.eventstream", "bedrock", "BedrockProvider")


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


#: A message's prelude: its total length, its headers' length and the CRC of both (4 bytes each).
_PRELUDE = 12

#: What the provider raises when one message passes ``max_event_bytes``: ``(limit name, limit, what)`` → error.
Overflow = Callable[[str, int, str], ProviderError]


class EventStreamFramer:
    """Raw body chunks in, ``(event, data)`` pairs out (see the module docstring); one per stream.

    :param max_event_bytes: the most bytes one message may take (``None``: botocore's own bounds only).
    :param overflow: builds the error for a message past ``max_event_bytes`` (the provider's
        :class:`~agentactors.ResponseTooLargeError`, which knows the response's status).
    """

    def __init__(
        self,
        *,
        provider: str,
        model: str | None,
        max_event_bytes: int | None = None,
        overflow: Overflow | None = None,
    ) -> None:
        module = _eventstream()
        self._buffer = module.EventStreamBuffer()
        self._provider = provider
        self._model = model
        self._pending = 0
        # The first bytes (up to its 4-byte total length) of the message not yet complete.
        self._head = b""
        self._max_event_bytes = max_event_bytes
        self._overflow = overflow

    def feed(self, chunk: bytes) -> Iterator[tuple[str, str]]:
        """The messages ``chunk`` completes (a message may span any number of chunks).

        Iterate it to its end before feeding the next chunk: the unfinished message's size and claimed length are
        checked once the complete ones are taken (a consumer that stopped early would leave them to a later chunk).
        """
        self._buffer.add_data(chunk)
        self._pending += len(chunk)
        while True:
            try:
                message = next(self._buffer, None)
            except Exception as exc:  # any parser failure on the vendor's bytes is a corrupt stream
                failure = MalformedResponseError(
                    f"the event stream is corrupt ({type(exc).__name__})", provider=self._provider, model=self._model
                )
            else:
                if message is None:
                    break
                size = int(message.prelude.total_length)
                self._check_size(size)
                self._pending -= size
                yield self._pair(message.headers, message.payload)
                continue
            # Raised outside the except block: botocore's exception (and the body it may quote) is not kept.
            raise failure
        if self._max_event_bytes is not None and self._pending > 0:
            self._check_claim(chunk)

    def _check_claim(self, chunk: bytes) -> None:
        """The unfinished message, past the limit already or claiming to be, is not waited for."""
        self._check_size(self._pending)
        # Its bytes are the last ``_pending`` of the body: begun in this chunk, or before it (head kept then).
        start = len(chunk) - self._pending
        self._head = chunk[start : start + 4] if start >= 0 else (self._head + chunk)[:4]
        if self._pending >= _PRELUDE:  # botocore has read the prelude and checked its CRC: its length is meant
            self._check_size(struct.unpack(">I", self._head)[0], claimed=True)

    def _check_size(self, size: int, *, claimed: bool = False) -> None:
        limit = self._max_event_bytes
        if limit is None or size <= limit:
            return
        what = f"one event-stream message ({size} bytes {'by its prelude' if claimed else 'so far'})"
        if self._overflow is not None:
            raise self._overflow("max_event_bytes", limit, what)
        raise MalformedResponseError(f"{what} is past max_event_bytes={limit}", provider=self._provider,
                                     model=self._model)

    def close(self) -> Iterator[tuple[str, str]]:
        """End of body: nothing more to hand on; bytes of an unfinished message are a truncated stream."""
        if self._pending > 0:
            raise MalformedResponseError(
                f"the event stream ended inside a message ({self._pending} bytes left over)",
                provider=self._provider,
                model=self._model,
            )
        return iter(())

    @staticmethod
    def _pair(headers: dict[str, Any], payload: bytes) -> tuple[str, str]:
        kind = _text(headers.get(":message-type", "event"))
        if kind == "exception":
            return EXCEPTION_PREFIX + _text(headers.get(":exception-type", "")), _text(payload)
        if kind == "error":
            message = json.dumps({"message": _text(headers.get(":error-message", ""))})
            return EXCEPTION_PREFIX + _text(headers.get(":error-code", "")), message
        return _text(headers.get(":event-type", "")), _text(payload)


def iter_messages(body: bytes, *, chunk: int = 1 << 16) -> Iterator[tuple[str, str]]:
    """Decode a whole recorded ConverseStream body into ``(event, data)`` pairs, as a live stream would be.

    Fed in ``chunk``-byte pieces.  Meant for tests and tooling that replay recorded streams.
    """
    framer = EventStreamFramer(provider="bedrock", model=None)
    for start in range(0, len(body), chunk):
        yield from framer.feed(body[start : start + chunk])
    yield from framer.close()
