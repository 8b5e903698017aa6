"""What the three vendors' batch APIs have in common: a line, a batch's status, an item's outcome, decoding.

Each vendor module (:mod:`._openai`, :mod:`._anthropic`, :mod:`._gemini`) is a :class:`BatchAPI`: it
submits lines (each the body the wire's own encoder made for the request, exactly what a single call
would send), reads a batch's status, and reads its results into outcomes — a response decoded by the
wire's own decoder, or the error the wire's own classifier makes of the vendor's item error.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Protocol

import anyio
import attrs

from ...errors import ErrorKind, MalformedResponseError, ProviderError
from ...messages import LLMRequest, LLMResponse
from ...providers.http.provider import HTTPProvider
from ...redaction import redact
from ._http import Receipt, VendorHTTP, dumps
from .errors import BatchError

__all__ = [
    "BatchAPI", "Line", "OpenLines", "Outcome", "Receipt", "Status", "custom_id", "decode_item", "failed", "index_of",
    "item_error", "keep", "missing", "model_of", "read_results", "unread", "unreadable",
]

log = logging.getLogger("agentactors.resilience.batch")

#: What an item ended with: the decoded response, or the error the run's call raises.
Outcome = LLMResponse | ProviderError


@attrs.define(slots=True, eq=False)
class Line:
    """One request in a batch: its id in the batch, the wire's body for it, and what decoding its answer needs.

    ``request`` is ``None`` for an item of a batch collected by its id (:class:`OpenLines`): the wire's decoder then
    reads the answer without the request (it is only stricter with one, e.g. on a tool's required arguments).
    """

    custom_id: str
    body: dict[str, Any]
    model: str
    request: LLMRequest | None
    size: int  # the body's bytes, as sent


class OpenLines(Mapping[str, Line]):
    """The lines of a batch collected by its id (:meth:`BatchProvider.collect`): not known in advance, so one is
    made for each custom id the vendor's results name (the item's answer is decoded against no request).

    ``failure``: the results could not be read to their end (:func:`unread`) — what was read is incomplete, and
    the items not read are not known by id, so the collection fails as a whole.
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self.made: dict[str, Line] = {}
        self.failure: ProviderError | None = None

    def __getitem__(self, key: str) -> Line:
        line = self.made.get(key)
        if line is None:
            line = self.made[key] = Line(key, {}, self.model, None, 0)
        return line

    def __iter__(self) -> Iterator[str]:
        return iter(self.made)

    def __len__(self) -> int:
        return len(self.made)

    def at(self, index: int) -> Line:
        """The line of the answer at ``index`` of a vendor that answers in order without ids (Gemini): keyed by
        its position, ``"0"``, ``"1"``, … (the custom id :func:`custom_id` made for it starts ``aa{index}-``)."""
        return self[str(index)]


def model_of(lines: Mapping[str, Line]) -> str:
    """The model of a batch's lines (one model a batch), for its errors' labels."""
    if isinstance(lines, OpenLines):
        return lines.model
    return next(iter(lines.values())).model if lines else ""


@attrs.frozen(slots=True)
class Status:
    """A batch as the vendor last described it.

    ``done``: it will not change any more; ``state``: the vendor's word for where it is; ``failure``: why the
    whole batch failed (``None`` unless it did); ``passing``: that failure is the account's limit, not the input's
    fault (nothing ran: the same batch submitted later is answered); ``ended``: ``"expired"`` / ``"cancelled"`` when
    it ended so (items without a result then end that way); ``raw``: the vendor's object, which results are read from.
    """

    done: bool
    state: str
    raw: Any = None
    failure: str | None = None
    ended: str | None = None
    passing: bool = False


class BatchAPI(Protocol):
    """One vendor's batch API, driven by :class:`~agentactors.resilience.batch.provider.BatchProvider`."""

    #: The most lines and request bytes one batch may hold at this vendor.
    max_lines: int
    max_bytes: int

    async def submit(self, model: str, lines: Sequence[Line], receipt: Receipt) -> str:
        """Create a batch of ``lines`` (one model); its id.  ``receipt``: marked through the create request
        (:meth:`~._http.VendorHTTP.send`'s ``creates``)."""
        ...

    async def status(self, batch_id: str, model: str) -> Status:
        """The batch's status now."""
        ...

    async def results(
        self, batch_id: str, status: Status, lines: Mapping[str, Line], deadline: float = math.inf
    ) -> dict[str, Outcome]:
        """The outcomes of an ended batch's items, by custom id (items without a result are left out).

        ``deadline`` (on anyio's clock): when reading results files stops (:func:`read_results`)."""
        ...

    async def cancel(self, batch_id: str, model: str) -> None:
        """Ask the vendor to cancel the batch (what it has not run yet is not run, nor billed)."""
        ...


def decode_item(provider: HTTPProvider, line: Line, body: Any, batch_id: str) -> Outcome:
    """An item's answer body, decoded by the wire's own decoder, marked as a batch call (its price is batch's).

    ``provider_data["batch"]`` holds the batch id and the item's custom id: what ``RunResult.cost`` reads to
    price the response at the vendor's batch rate (:func:`agentactors.pricing.response_cost`).
    """
    name = provider.name
    try:
        response = provider.codec.decode_response(body, request=line.request, model=line.model, provider=name)
    except ProviderError as exc:
        return exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        return MalformedResponseError(
            f"a batch item's answer could not be decoded ({type(exc).__name__})", provider=name, model=line.model
        )
    data = dict(response.provider_data or {})
    data["batch"] = {"id": batch_id, "custom_id": line.custom_id}
    response = attrs.evolve(response, provider_data=data)
    return response if response.provider == name else response.with_provider(name)


def item_error(provider: HTTPProvider, line: Line, status: int, body: Any) -> ProviderError:
    """The vendor's error for one item (HTTP ``status``, its error ``body``) as the wire classifies it."""
    raw = body if isinstance(body, bytes) else dumps(body)
    return provider.codec.classify_error(status, {}, raw, model=line.model, provider=provider.name)


def failed(provider: str, batch_id: str, status: Status, model: str, custom_id: str | None = None) -> BatchError:
    """The error of a call whose whole batch the vendor failed: a request error (what was submitted was refused), or
    a retryable one when the vendor failed it for the account's limit (:attr:`Status.passing`)."""
    if status.passing:
        return BatchError(
            f"batch {batch_id} failed: {status.failure} (an account limit at the vendor, not this request's fault: "
            "nothing ran, and it may be sent again once the batches in progress have ended)", provider=provider,
            reason="failed", model=model, batch_id=batch_id, custom_id=custom_id, kind=ErrorKind.transient,
            retryable=True)
    return BatchError(f"batch {batch_id} failed: {status.failure}", provider=provider, reason="failed", model=model,
                      batch_id=batch_id, custom_id=custom_id)


def missing(provider: str, line: Line, batch_id: str, status: Status) -> BatchError:
    """The error of an item the ended batch holds no result for: expired, cancelled, or missing."""
    reason = status.ended or "missing"
    words = {
        "expired": "the batch's completion window ended before this request ran",
        "cancelled": "the batch was cancelled before this request ran",
    }.get(reason, f"the batch ended ({status.state}) without a result for this request")
    return BatchError(
        f"batch {batch_id}: {words}", provider=provider, reason=reason, model=line.model, batch_id=batch_id,
        custom_id=line.custom_id,
    )



async def read_results(
    http: VendorHTTP, url: str, model: str, lines: Mapping[str, Line], out: dict[str, Outcome],
    outcome: Callable[[Line, dict[str, Any]], Outcome], deadline: float = math.inf,
) -> None:
    """Read the JSONL results file at ``url`` into ``out``: each line whose ``custom_id`` is one of ``lines``' as
    ``outcome(line, item)`` (:func:`keep`: a duplicate never replaces an answer; an id not ours is ignored).

    The file is streamed (:meth:`VendorHTTP.lines`): memory holds one line at a time, whatever the file's size.
    A line that is not a JSON object (truncated, garbled) or longer than twice ``max_response_bytes`` is skipped
    and logged, not raised: one bad line must not throw away every other answer of the batch, each one paid
    for.  The call whose line it was finds no result and fails with a typed, retryable
    :class:`~agentactors.resilience.batch.BatchError` (``reason="missing"``, :func:`missing`).

    The read stops at ``deadline`` (anyio's clock) whatever the HTTP client's timeouts are (a client built with
    ``timeout=None`` would wait for ever on a file that stalls part way): a retryable :class:`BatchError`
    (``reason="poll"``) then, as for a file that broke.

    :raises ProviderError: the file could not be read (to its end): what was read before stays in ``out``.
    """
    provider = http.name
    skipped = 0
    started = anyio.current_time()
    try:
        with anyio.CancelScope(deadline=deadline) as bound:
            async with aclosing(
                http.lines(url, model=model, line_limit=2 * http.provider.limits.max_response_bytes)
            ) as it:
                async for text in it:
                    if text is None:
                        skipped += 1
                        continue
                    if not text.strip():
                        continue
                    try:
                        item = json.loads(text)
                    except (ValueError, RecursionError):
                        item = None
                    if not isinstance(item, dict):
                        skipped += 1
                        continue
                    found = item.get("custom_id")
                    line = lines.get(found) if isinstance(found, str) and found else None
                    if line is not None:
                        keep(out, line.custom_id, outcome(line, item))
    finally:
        if skipped:
            log.warning("%s (%s): %d line(s) of a batch results file are not JSON objects or are too long; skipped",
                        provider, model, skipped)
    if bound.cancelled_caught:
        raise BatchError(
            f"its results file was not read to its end in the time reading a batch's results may take (the rest "
            f"of max_wait, at least an hour): stopped {anyio.current_time() - started:g} s into this file",
            provider=provider, reason="poll", model=model, kind=ErrorKind.transient, retryable=True,
        )


def unreadable(error: ProviderError, batch_id: str | None, line: Line) -> ProviderError:
    """The error a waiting call gets when its batch (or its results) could not be read to the end: the reading's
    own, if it is the vendor's verdict (a 404, a refused key), else a retryable :class:`BatchError` (``"poll"``)."""
    if not error.retryable:
        return error
    failure = BatchError(
        f"batch {batch_id} could not be read: {error.message}", provider=error.provider, reason="poll",
        model=line.model, batch_id=batch_id, custom_id=line.custom_id, kind=ErrorKind.transient, retryable=True,
    )
    failure.__cause__ = error
    return failure


def unread(out: dict[str, Outcome], lines: Mapping[str, Line], error: ProviderError, batch_id: str) -> None:
    """A results file failed part way: each item it had not answered yet gets :func:`unreadable`'s error (those it
    had keep their answers — paid for, and not to be paid again by a retry)."""
    log.warning("batch %s: reading its results failed part way (%s); %d of %d item(s) were read", batch_id,
                redact(str(error)), len(out), len(lines))
    if isinstance(lines, OpenLines):
        lines.failure = lines.failure or error
    for key, line in lines.items():
        if key not in out:
            out[key] = unreadable(error, batch_id, line)


def keep(out: dict[str, Outcome], custom_id: str, outcome: Outcome) -> None:
    """Put ``outcome`` in ``out`` for ``custom_id`` unless the item was answered already.

    A results file should hold one line per item; one that holds more never has a later line replace an
    answer (a response, paid for) — the first response wins, and a response wins over an error.
    """
    if not isinstance(out.get(custom_id), LLMResponse):
        out[custom_id] = outcome


def custom_id(index: int, digest: str) -> str:
    """An item's id in its batch: its position (Gemini answers in order, without ids) and its request's digest.

    ``[A-Za-z0-9_-]``, at most 64 characters: what every vendor's custom ids allow.
    """
    return f"aa{index}-{digest[:24]}"


def index_of(custom_id: str) -> int:
    """The position :func:`custom_id` put in ``custom_id`` (``-1`` for an id it did not make)."""
    head = custom_id.partition("-")[0]
    return int(head[2:]) if head.startswith("aa") and head[2:].isdigit() else -1
