"""The batch API's control plane: requests to the wrapped provider's vendor with its credentials and its errors.

Submitting, polling and downloading are not the wire's calls, so the provider's sender (which only POSTs a
request body) does not make them; they go through httpx — the provider's own ``httpx.AsyncClient`` when it
was given one, else a short-lived client per call (a few calls per batch and per ``poll_every``: a pool
kept between polls half an hour apart would only hold dead connections).  What they share with the wire's
calls is what matters: the URLs are under the provider's ``base_url``, the credentials are the provider's
(:meth:`~agentactors.providers.http.provider.HTTPProvider.credential_headers`: refused for any other
origin, so a vendor's answer naming another host never receives the key), a non-2xx answer is classified
by the wire's own ``classify_error``, a transport failure by :func:`~agentactors.classify_exception`, and
every error's text is redacted of the key.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ..._containment import cancellation_alone
from ...errors import MalformedResponseError, ProviderError, ResponseTooLargeError
from ...providers.errors import classify_exception
from ...providers.http.limits import ERROR_BODY_BYTES
from ...providers.http.provider import HTTPProvider

if TYPE_CHECKING:
    import httpx  # imported by the first call that makes a client: `import agentactors` does not load httpx

__all__ = ["Receipt", "VendorHTTP"]

#: The longest closing a streamed answer may take (it is shielded from the cancellation that stopped its read).
_CLOSE_BOUND = 10.0

_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON: what the provider sends as a request body."""
    return _JSON.encode(value).encode("utf-8")


@attrs.define(slots=True, eq=False)
class Receipt:
    """What one submission got as far as: whether its *create* request may have reached the vendor.

    ``creating`` is set right before the request that creates the batch is sent (OpenAI's ``POST /batches``,
    after its file upload; Anthropic's and Gemini's one create request), and set back when its failure proves
    that nothing was created — the connection never opened, or the vendor answered with a 4xx refusal.  A
    submission that failed (or ran past its bound) while it is set may have made a vendor batch that nobody
    knows the id of: the vendors take no idempotency key on batch creation, so sending the same work again
    could make a second batch, billed twice (:class:`~agentactors.resilience.batch.provider.BatchProvider`
    then fails its calls for good, ``BatchError(reason="unconfirmed")``).  ``input_file``: the id of the file
    OpenAI's create request names (its upload's), once known — what the vendor's batch list shows of the batch,
    to find it by.
    """

    creating: bool = False
    input_file: str | None = None


class VendorHTTP:
    """Makes the batch API's requests for one :class:`~agentactors.providers.http.provider.HTTPProvider`.

    :param limit: the most bytes read of one answer (a results file of 10,000 answers is tens of MB).
    """

    def __init__(self, provider: HTTPProvider, *, limit: int) -> None:
        self.provider = provider
        self.limit = limit

    @property
    def name(self) -> str:
        return self.provider.name

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        given = self.provider.http_client
        if given is not None:
            yield given
            return
        import httpx

        from ...providers.http.provider import DEFAULT_TIMEOUT

        async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT) as client:
            yield client

    async def json(
        self, method: str, url: str, *, model: str, body: Any = None, files: Mapping[str, Any] | None = None,
        data: Mapping[str, str] | None = None, limit: int | None = None, creates: Receipt | None = None,
    ) -> Any:
        """Send, and return the answer's JSON (a :class:`~agentactors.MalformedResponseError` if it is not)."""
        raw = await self.send(method, url, model=model, body=body, files=files, data=data, limit=limit, creates=creates)
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise _malformed(self.name, model, f"{method} {url} answered {len(raw)} bytes that are not JSON") from None

    async def _headers(self, url: str, content: bytes | None, model: str) -> dict[str, str]:
        try:
            headers = await self.provider.credential_headers(url, content or b"", model)
        except ValueError as exc:
            raise _malformed(self.name, model, str(exc)) from None
        headers["accept"] = "application/json"
        if content is not None:
            headers["content-type"] = "application/json"
        else:
            headers.pop("content-type", None)  # a multipart form, or no body: httpx says what it is
        return headers

    async def lines(self, url: str, *, model: str, line_limit: int) -> AsyncGenerator[bytes | None, None]:
        """``GET url`` (a results file), streamed: its lines one by one, ``None`` for a line past ``line_limit``.

        A results file holds every item's answer — tens of thousands of them, gigabytes — so it is never held
        whole: at most one line (``line_limit`` bytes) and the chunk being split are in memory at a time, and
        a line longer than that is skipped (read to its end and dropped, yielded as ``None``), not an error
        that would lose every other answer of the file.  Use it under ``contextlib.aclosing``.

        :raises ProviderError: as :meth:`send` (a failure part way through the file too: what was yielded stands).
        """
        headers = await self._headers(url, None, model)
        try:
            async with self._client() as client:
                # Never a redirect, whatever the client says: the credential headers would go with it.
                response = await client.send(
                    client.build_request("GET", url, headers=headers), stream=True, follow_redirects=False
                )
                try:
                    status = response.status_code
                    if not 200 <= status < 300:
                        raw = await _read(response, ERROR_BODY_BYTES, self.name, model, strict=False)
                        raise self.provider.codec.classify_error(
                            status, response.headers, raw, model=model, provider=self.name
                        )
                    async for line in _split(response.aiter_bytes(), line_limit):
                        yield line
                finally:
                    # Shielded (bounded): a read its bound stopped (read_results') still closes its connection.
                    with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_BOUND):
                        await response.aclose()
        except anyio.get_cancelled_exc_class():
            raise
        except ProviderError:
            raise
        except Exception as exc:
            raise classify_exception(exc, provider=self.name, model=model) from None
        except BaseExceptionGroup as group:  # trio: cancelled while connecting (_containment.cancellation_alone)
            alone = cancellation_alone(group)
            if alone is None:
                raise
            raise alone from None

    async def send(
        self, method: str, url: str, *, model: str, body: Any = None, files: Mapping[str, Any] | None = None,
        data: Mapping[str, str] | None = None, limit: int | None = None, creates: Receipt | None = None,
    ) -> bytes:
        """Send ``method url`` (a JSON ``body``, or a multipart form of ``files`` and ``data``); the answer's bytes.

        ``creates``: this request creates a batch — marked ``creating`` from just before it is sent (not when the
        client is closed: httpx refuses such a request before anything leaves), and unmarked
        when its failure proves that the vendor made nothing: the connection never opened (nothing was sent), or
        the vendor answered with a 4xx (a refusal).  Anything else — a 2xx, a 5xx (a gateway's 502/504 may come
        after the vendor acted), a connection dropped after sending, a read timeout, a cancellation — leaves it
        marked: the batch may exist.

        :raises ProviderError: classified as the wire classifies the vendor's errors (transport: transient).
        """
        content = dumps(body) if body is not None else None
        headers = await self._headers(url, content, model)
        try:
            async with self._client() as client:
                request = client.build_request(method, url, headers=headers, content=content, files=files, data=data)
                if creates is not None:
                    # Marked from here: a closed client (its owner's ``async with`` ended) refuses before sending.
                    creates.creating = not client.is_closed
                response = await client.send(request, stream=True, follow_redirects=False)  # (as lines())
                try:
                    status = response.status_code
                    cap = ERROR_BODY_BYTES if not 200 <= status < 300 else (limit or self.limit)
                    raw = await _read(response, cap, self.name, model, strict=200 <= status < 300)
                finally:
                    await response.aclose()
        except anyio.get_cancelled_exc_class():
            raise
        except ProviderError:
            raise
        except Exception as exc:
            if creates is not None and _unsent(exc):
                creates.creating = False
            failure = classify_exception(exc, provider=self.name, model=model)
        except BaseExceptionGroup as group:  # trio: cancelled while connecting (_containment.cancellation_alone)
            alone = cancellation_alone(group)
            if alone is None:
                raise
            raise alone from None
        else:
            if 200 <= status < 300:
                return raw
            if creates is not None and 400 <= status < 500:
                creates.creating = False  # the vendor refused it: nothing was created
            failure = self.provider.codec.classify_error(status, response.headers, raw, model=model, provider=self.name)
        raise failure


def _unsent(exc: BaseException) -> bool:
    """Whether ``exc`` (what the HTTP client raised) proves the request never left: the connection did not open,
    or no connection of the pool was free.  (httpx is loaded by then: this is only called once a client failed.)"""
    import httpx

    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)


async def _read(response: httpx.Response, limit: int, provider: str, model: str, *, strict: bool) -> bytes:
    """The body, up to ``limit`` bytes: past it, an error for a body that matters, the head of an error body."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            if not strict:
                chunks.append(chunk)
                return b"".join(chunks)[:limit]
            raise ResponseTooLargeError(
                f"a batch API answer went past {limit} bytes", provider=provider, model=model,
                limit="max_response_bytes", limit_bytes=limit,
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def _split(chunks: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes | None]:
    """The lines of a stream of ``chunks`` (without their newline); ``None`` for each line longer than ``limit``."""
    pending = bytearray()
    overlong = False
    async for chunk in chunks:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not overlong:
                    pending += chunk[start:]
                    if len(pending) > limit:
                        overlong = True
                        pending.clear()
                break
            if overlong or len(pending) + end - start > limit:
                yield None
            else:
                pending += chunk[start:end]
                yield bytes(pending)
            pending.clear()
            overlong = False
            start = end + 1
    if overlong:
        yield None
    elif pending:
        yield bytes(pending)


def _malformed(provider: str, model: str, message: str) -> ProviderError:
    return MalformedResponseError(message, provider=provider, model=model)
