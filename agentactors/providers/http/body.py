"""Reading one response body: decompressed here, never past its limit, and closed by its reader.

httpx decompresses a whole network chunk at once (a 64 KiB gzip chunk may inflate to 64 MiB)
and reads bodies without bound.  :class:`BodyReader` reads the *raw* bytes instead, inflates
``gzip`` / ``deflate`` itself in bounded steps, counts what it produced and stops at the limit:
memory stays bounded by the limit plus one step, whatever the server sends.

It also closes what it reads.  httpx and httpcore iterate a body through a stack of async
generators; one left half-read is finalised at garbage collection, which trio reports as a
``ResourceWarning``.  :meth:`BodyReader.aclose` closes the response and then runs that stack to
its end in the reader's own task, under an expired deadline (the first wait inside raises
cancellation, which ends every generator in the stack), so nothing is left for the garbage
collector.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from ...errors import MalformedResponseError, ResponseTooLargeError

if TYPE_CHECKING:
    from .transport import WireResponse

__all__ = ["BodyReader"]

# One inflate step produces at most this much: the memory a compressed body may cost over its limit.
_STEP = 256 * 1024
# Closing must not hang a cancelled caller; past this the generators are left to the collector.
_CLOSE_GRACE = 5.0
# A closed response's stack ends within a step or two; this bounds one that keeps yielding buffered data.
_FINISH_STEPS = 64


class _Inflater:
    """``gzip`` / ``deflate`` decoding, at most one step of output at a time.

    ``deflate`` may be zlib-wrapped or raw, as httpx accepts both.
    """

    def __init__(self, encoding: str) -> None:
        self._deflate = encoding == "deflate"
        self._first = True
        self._z = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else zlib.MAX_WBITS | 16)
        self._input = b""

    @property
    def has_input(self) -> bool:
        return bool(self._input)

    def feed(self, data: bytes) -> None:
        self._input = data

    def step(self) -> bytes:
        """Up to one step of output from the input fed (``b""`` once it is used up)."""
        while self._input:
            data, self._input = self._input, b""
            try:
                piece = self._z.decompress(data, _STEP)
            except zlib.error:
                if not (self._deflate and self._first):
                    raise
                # Some servers send raw deflate under "deflate"; httpx accepts it, so do we.
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                self._first = False
                self._input = data
                continue
            self._first = False
            # What did not fit in this step waits for the next one; bytes after the end are ignored.
            self._input = b"" if self._z.eof else self._z.unconsumed_tail
            if piece:
                return piece
        return b""


class BodyReader:
    """One response's body, read in decoded chunks up to ``limit`` bytes.

    :meth:`read` returns the next chunk (``b""`` at the end) and raises
    :class:`~agentactors.errors.ResponseTooLargeError` (naming ``limit_name``) once more
    than ``limit`` decoded bytes arrived, and :class:`~agentactors.errors.MalformedResponseError`
    for a content-encoding that was not offered or does not decode.  Transport errors
    (httpx's) propagate for the caller to classify.  :meth:`aclose` must be called (the
    provider does so in a ``finally``).

    Cancellation: :meth:`read` is a plain network read; cancelling it leaves the reader
    to :meth:`aclose`, which is shielded and bounded (5 s), so a cancelled caller still
    closes the connection and the server sees the disconnect.
    """

    def __init__(
        self, response: WireResponse, *, limit: int, limit_name: str, provider: str, model: str | None
    ) -> None:
        self._response = response
        # A response whose aclose never waits (the aiohttp sender's) needs no shielded scope to close.
        self._closes_at_once = bool(getattr(response, "closes_without_waiting", False))
        self._limit = limit
        self._limit_name = limit_name
        self._provider = provider
        self._model = model
        self._refusal: MalformedResponseError | None = None
        self._whole: bytes | None = None
        self._inflater: _Inflater | None = None
        if response.is_stream_consumed:
            # Read already (a response built in memory, as httpx.MockTransport returns): httpx decoded it.
            self._whole = response.content
            self._raw: AsyncIterator[bytes] = _nothing()
        else:
            self._raw = response.aiter_raw()
            try:
                self._inflater = self._inflater_for(response.headers)
            except MalformedResponseError as exc:  # raised by the first read, so the caller's finally closes us
                self._refusal = exc
        self._total = 0
        self._started = False
        self._ended = False
        self._closed = False

    @property
    def bytes_read(self) -> int:
        """Decoded bytes produced so far."""
        return self._total

    def _inflater_for(self, headers: Mapping[str, str]) -> _Inflater | None:
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding in ("", "identity"):
            return None
        if encoding in ("gzip", "x-gzip", "deflate"):
            return _Inflater("deflate" if encoding == "deflate" else "gzip")
        raise self._malformed(f"content-encoding {encoding!r} was not offered (the request accepts gzip, deflate)")

    def _malformed(self, message: str) -> MalformedResponseError:
        return MalformedResponseError(
            message, provider=self._provider, model=self._model, status=self._response.status_code
        )

    def too_large(self, limit_name: str, limit: int, what: str) -> ResponseTooLargeError:
        """The error for ``what`` going past ``limit_name`` (``limit`` bytes) in this response."""
        return ResponseTooLargeError(
            f"{what} went past {limit_name}={limit} bytes; reading stopped there",
            provider=self._provider,
            model=self._model,
            status=self._response.status_code,
            limit=limit_name,
            limit_bytes=limit,
        )

    async def read(self) -> bytes:
        """The next decoded chunk, ``b""`` at the end of the body.

        Cancellation: a cancellation point while it waits for bytes.  A cancelled read returns nothing and
        leaves the reader to :meth:`aclose` (the owned senders' responses close their connection at once).
        """
        if self._refusal is not None:
            raise self._refusal
        chunk = b""
        if self._whole is not None:
            chunk, self._whole, self._ended = self._whole, None, True
        while not chunk:
            if self._inflater is not None and self._inflater.has_input:
                chunk = self._inflate()
                continue
            if self._ended:
                return b""
            self._started = True
            try:
                raw = await self._raw.__anext__()
            except StopAsyncIteration:
                self._ended = True
                return b""
            if self._inflater is None:
                chunk = raw
            else:
                self._inflater.feed(raw)
        self._total += len(chunk)
        if self._total > self._limit:
            raise self.too_large(self._limit_name, self._limit, "the response body")
        return chunk

    def _inflate(self) -> bytes:
        assert self._inflater is not None
        try:
            return self._inflater.step()
        except zlib.error as exc:
            raise self._malformed(f"the body does not decode as its content-encoding says ({exc})") from None

    async def read_all(self) -> bytes:
        """The whole body (raises past the limit).

        Cancellation: as :meth:`read`: what was read so far is dropped, and the reader is left to :meth:`aclose`.
        """
        parts: list[bytes] = []
        while chunk := await self.read():
            parts.append(chunk)
        return b"".join(parts)

    async def read_head(self, size: int) -> bytes:
        """At most ``size`` bytes from the start of the body, then stop reading (no error past the limit).

        Cancellation: as :meth:`read_all`.
        """
        parts: list[bytes] = []
        got = 0
        while got < size:
            try:
                chunk = await self.read()
            except ResponseTooLargeError:
                break
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)[:size]

    async def aclose(self) -> None:
        """Close the response and finish the transport's generators in this task (idempotent).

        Cancellation: shielded, and bounded (5 s): a cancelled caller still closes the response and its
        connection, and the cancellation is delivered at its next checkpoint.
        """
        if self._closed:
            return
        self._closed = True
        if self._closes_at_once:
            # It awaits nothing, so a cancellation cannot interrupt it, and it leaves no generator behind.
            await self._response.aclose()
            return
        if self._ended or not self._started:
            # Read to its end (or never read): nothing is left half way, closing does not wait.
            with anyio.CancelScope(shield=True):
                await self._response.aclose()
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_GRACE):
            await self._response.aclose()
            await _finish(self._raw, started=self._started and not self._ended)


async def _nothing() -> AsyncIterator[bytes]:
    empty: tuple[bytes, ...] = ()
    for chunk in empty:  # an async generator that yields nothing
        yield chunk


async def _finish(raw: AsyncIterator[bytes], *, started: bool) -> None:
    """End a half-read body iterator now that its response is closed, in this task.

    An iterator never started holds nothing to finalise and one that ended is done.  Otherwise
    the next step runs under an expired deadline: the first wait inside raises cancellation
    (or the closed connection refuses to read first), which ends every generator beneath it.
    """
    if started:
        with anyio.move_on_after(0):
            for _ in range(_FINISH_STEPS):
                try:
                    await raw.__anext__()
                except StopAsyncIteration:
                    return
                except Exception:  # the closed connection refused to read: that ends the stack too
                    return
    aclose: Any = getattr(raw, "aclose", None)
    if aclose is not None:
        await aclose()
