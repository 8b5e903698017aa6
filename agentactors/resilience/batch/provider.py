"""``BatchProvider``: the requests of many runs sent through the vendor's batch API, at about half the price.

A vendor's batch API answers within hours, not seconds, at about 50 % of the price (OpenAI's Batch API,
Anthropic's Message Batches, Gemini's Batch Mode).  A run whose step waits on a batch is an idle actor: so
this decorator collects the requests of every run that calls it for ``window`` seconds (or until
``max_requests``), submits them as one batch, polls it every ``poll_every`` seconds, and answers each run's
call with its own item — decoded by the wire's own decoder, exactly as a single call's answer would be.

How the waiting works, with no task of its own: each collecting (and then submitted) batch is *driven* by
one of the calls waiting on it — the first one waits out the window, submits, then polls — while the others
wait for it; a driver that is cancelled hands the batch to the next waiter.  So nothing outlives the calls,
and the decorator needs no runtime or task group.  A call cancelled before its batch was submitted withdraws
its request; after, its item is left to the batch (the vendor has it, and bills it; the answer is dropped,
and the vendor batch is not cancelled — only one still running after ``max_wait`` is), and it is noted as a call
cut short (:func:`agentactors.pricing.note_cut_short`: its prompt, at the batch price) for its run to charge.  The
submission itself is shielded from cancellation, so a batch the vendor created is never lost track of.

With a journal (``Runtime(journal=...)``) each submitted request is parked there (:mod:`._park`), so a crash
loses nothing: ``rt.recover()`` re-runs the step, the same request finds its batch, and it is polled, not
submitted again.  Without one, a batch no call waits on any more is read back by its id
(:meth:`BatchProvider.collect`), so the answers paid for are not lost.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
import re
from collections.abc import Callable
from typing import Any

import anyio
import attrs

import agentactors._reexport as _reexport

from ...errors import ErrorKind, ProviderError
from ...events import emit
from ...gateway.provider import estimate_tokens
from ...messages import LLMRequest, LLMResponse
from ...pricing import CutShort, note_cut_short
from ...providers.http.provider import HTTPProvider
from ...providers.port import (
    Capabilities,
    StreamContext,
    capabilities_of,
    check_forced_tool_choice,
    check_response_format,
    default_model_of,
    resolve_model,
    stream_from_complete,
)
from ...redaction import redact
from ..decorator import ProviderDecorator, as_provider_error
from ._api import (
    BatchAPI,
    Line,
    OpenLines,
    Outcome,
    Receipt,
    Status,
    custom_id,
    failed,
    index_of,
    missing,
    unreadable,
)
from ._http import VendorHTTP, dumps
from ._park import Entry, Parking, journal_of_runtime
from ._vendors import api_for
from .errors import BatchError, BatchUnsupportedError

__all__ = ["BatchProvider"]

log = logging.getLogger("agentactors.resilience.batch")

#: Consecutive failed polls (each a transient error) after which the batch's waiting calls fail.
MAX_POLL_FAILURES = 10
#: The longest wait between two failed polls: after the second failure in a row the wait doubles, up to this (or
#: ``poll_every``, when that is longer), and is never shorter than the vendor's ``Retry-After``.
MAX_POLL_BACKOFF = 3600.0
#: Bytes counted for each line's envelope in a batch (its custom id, OpenAI's ``method`` and ``url``, Gemini's
#: ``metadata``) and for the whole submission's (the batch's JSON, a multipart form): what the vendors' limits on a
#: batch's size count besides the request bodies.
LINE_ENVELOPE = 256
BATCH_ENVELOPE = 64 * 1024
#: The longest a submission may take (it is shielded from cancellation, so it is bounded).
SUBMIT_BOUND = 300.0
#: A batch's status answer may be this many times ``max_response_bytes`` (Gemini's holds every item's answer
#: inline); a results file (OpenAI's, Anthropic's) is streamed instead, a line at a time.
RESULTS_FACTOR = 16
#: The longest a call waits on a submitted batch by default: twice the vendors' 24-hour completion window.
MAX_WAIT = 48 * 3600.0
#: The least time reading an ended batch's results may take (the whole read, every file of it): it may take the rest
#: of ``max_wait`` when that is longer.  A results file that stalls part way ends there (its answers read are kept).
RESULTS_BOUND = 3600.0
#: The longest asking the vendor to cancel a batch that went past ``max_wait`` may take (it is shielded).
CANCEL_BOUND = 60.0
#: A vendor's batch id (``batch_…``, ``msgbatch_…``, Gemini's name without ``batches/``): it goes into a URL.
_BATCH_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")


class _Waiter:
    """One call waiting on a batch: its line, the journal it parks in, and its outcome once known."""

    __slots__ = ("digest", "entry", "journal", "line", "outcome", "parked")

    def __init__(self, line: Line, digest: str, journal: Any | None) -> None:
        self.line = line
        self.digest = digest
        self.journal = journal
        self.entry: Entry | None = None  # its place in a submitted batch
        self.parked = False
        self.outcome: Outcome | None = None


class _Batch:
    """One batch: collecting lines, then submitted (its id known), then ended (every waiter has its outcome)."""

    def __init__(self, model: str, opened: float) -> None:
        self.model = model
        self.opened = opened
        self.lines: dict[str, Line] = {}
        self.waiters: dict[str, _Waiter] = {}
        self.size = 0
        self.count = 0  # lines ever added: the next line's position
        self.full = anyio.Event()
        self.id: str | None = None
        self.state = "collecting"  # collecting | submitting (its lines are being sent) | submitted | ended
        self.driven = False
        self.next_poll = opened
        self.failures = 0  # failed status reads in a row: the batch's, kept when its driver hands it over
        self.deadline = math.inf  # when its waiting calls stop waiting (max_wait after it was submitted)
        self.wake = anyio.Event()

    def poke(self) -> None:
        """Wake every waiter: something changed (the batch was submitted or ended, its driver left)."""
        self.wake.set()
        self.wake = anyio.Event()


class BatchProvider(ProviderDecorator):
    """Answer calls through the vendor's batch API: collected for ``window`` seconds, submitted, polled.

    ``provider`` is an :class:`~agentactors.OpenAIProvider` (Chat Completions lines, through Files and
    ``/v1/batches``), an :class:`~agentactors.AnthropicProvider` (``/v1/messages/batches``) or a
    :class:`~agentactors.GeminiProvider` (``batchGenerateContent``, inline requests), each at its vendor's own
    endpoint; anything else raises :class:`BatchUnsupportedError` here.  Its base URL, credentials (only
    ever sent to its own origin), HTTP client, request encoder, response decoder and error classifier are the
    ones used: a batch item is what a single call would send, and its answer is decoded the same way.

    * ``window``: seconds a batch collects requests after its first one; ``max_requests``: it is submitted
      at once when it holds this many (also bounded by the vendor's own limits on lines and bytes).  Each
      model gets its own batches (the vendors take one model per batch, or price it so).
    * ``poll_every``: seconds between status reads of a submitted batch (more than 0).  A failed read is tried again
      at ``poll_every`` twice, then backing off (doubling, up to an hour), never sooner than the vendor's
      ``Retry-After``; the calls give up after ``MAX_POLL_FAILURES`` failed reads in a row (hours, not minutes).
    * A request that no batch of its vendor can hold (with its envelope, past the vendor's limit on a batch's bytes)
      is refused before anything is sent: :class:`BatchError` ``reason="too_large"``, a request error.
    * ``max_wait``: the longest its calls wait on a submitted batch (48 h by default: twice the vendors' 24 h
      window), counted from its submission (from the first call that resumed it, after a restart).  A batch
      still running then — a vendor stuck "in progress" — is cancelled at the vendor (best effort), read once
      more (answers made before the cancel are delivered), and every call still without an answer fails with a
      :class:`BatchError` (``reason="timeout"``, not retryable: a retry would wait as long again).
    * ``complete()`` waits until its item is answered; ``stream()`` does too, then delivers the whole answer
      as one stream (``capabilities(...).streaming`` is ``False``: a batch has no partial answers).
    * Failures are typed: an item the vendor answered with an error is that error as the wire classifies it
      (a 400 is a request error); an item that expired or was cancelled, or that an ended batch holds no
      result for, is a retryable :class:`BatchError` (``reason``: ``expired`` / ``cancelled`` /
      ``missing``); a batch the vendor failed fails each of its calls with a :class:`BatchError`
      (``reason="failed"``, not retryable — unless the vendor failed it for the account's limit, when nothing ran:
      then retryable); a submission the vendor refused fails its calls with that error.
      A results file is streamed a line at a time (memory holds one line, whatever the file's size); one that
      breaks part way keeps the answers read, and the other calls get a retryable ``BatchError("poll")`` — as
      they do when reading the results runs past its bound, the rest of ``max_wait`` and at least
      ``RESULTS_BOUND`` (an hour), whatever the HTTP client's own timeouts (a file that stalls part way).
    * Responses carry ``provider_data["batch"] = {"id", "custom_id"}``: ``RunResult.cost`` prices them at the
      vendor's batch rate (:func:`agentactors.pricing.price_for` with ``batch=True``).
    * In a runtime with a journal, each submitted request is parked there and survives a restart (see
      :mod:`agentactors.resilience.batch._park`); a cancelled call removes its entry.
    * Events (in the driving run): ``batch.submitted(batch_id, model, size)``, ``batch.ended(batch_id, state,
      answered, failed)``, ``batch.cancelled(batch_id, model, reason)`` (past ``max_wait``); in each run,
      ``batch.parked(batch_id, custom_id, key)`` and ``batch.resumed(batch_id, custom_id, key)`` (a recovered
      request found its batch; ``key``: the request's digest, its journal key), ``batch.left(batch_id, custom_id,
      model)`` (a call cancelled after its batch was submitted: where its answer is).
    * :meth:`collect` reads a submitted batch back by its id — one no call waits on any more (a process gone
      without a journal, callers cancelled, an unconfirmed submission found in the vendor's list) — and
      :meth:`is_item_of` maps its items back to the requests that asked them.

    Through a :class:`~agentactors.ProviderActor` (``agent.run(..., runtime=rt)``), the actor's
    ``max_concurrency`` (64 by default) bounds how many calls can wait at once, and so a batch's size: give
    the agent ``ProviderActor.shared(rt, batch_provider, max_concurrency=10_000)``.  Do not put a
    ``with_timeout`` below hours above it: a timed-out call leaves its item to the batch and is billed.
    """

    def __init__(
        self,
        provider: HTTPProvider | Any,
        *,
        window: float = 5.0,
        max_requests: int = 10_000,
        poll_every: float = 30.0,
        max_wait: float = MAX_WAIT,
    ) -> None:
        super().__init__(provider)
        if not isinstance(provider, HTTPProvider):
            raise BatchUnsupportedError(
                f"BatchProvider needs an OpenAI, Anthropic or Gemini provider itself (not {type(provider).__name__}):"
                " put decorators such as with_retry around the BatchProvider, not inside it",
                provider=str(getattr(provider, "name", type(provider).__name__)),
            )
        for label, value in (("window", window), ("poll_every", poll_every), ("max_wait", max_wait)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise ValueError(f"{label} must be a non-negative, finite number of seconds, not {value!r}")
        # poll_every=0 would read the batch's status in a loop without a pause (a request after a request,
        # for hours); max_wait=0 would fail every call the moment its batch was submitted.
        for label, value in (("poll_every", poll_every), ("max_wait", max_wait)):
            if value == 0:
                raise ValueError(f"{label} must be more than 0 seconds, not {value!r}")
        if isinstance(max_requests, bool) or not isinstance(max_requests, int) or max_requests < 1:
            raise ValueError(f"max_requests must be a positive int, not {max_requests!r}")
        api = api_for(provider, VendorHTTP(provider, limit=provider.limits.max_response_bytes * RESULTS_FACTOR))
        if api is None:
            raise BatchUnsupportedError(
                f"{type(provider).__name__} ({type(provider.codec).__name__}) has no batch API BatchProvider can "
                "drive: use OpenAIProvider (chat), AnthropicProvider or GeminiProvider at the vendor's own endpoint",
                provider=provider.name,
            )
        self._http_provider = provider
        self._api: BatchAPI = api
        self.window = float(window)
        self.max_requests = min(max_requests, api.max_lines)
        self.poll_every = float(poll_every)
        self.max_wait = float(max_wait)
        self._clock: Callable[[], float] = anyio.current_time  # the clock anyio's sleeps and scopes run on
        self._open: dict[str, _Batch] = {}  # collecting, by model
        self._submitted: dict[str, _Batch] = {}  # by batch id
        self._parking = Parking()
        #: Batches submitted by this provider (all time).
        self.submitted = 0

    def capabilities(self, model: str | None) -> Capabilities:
        """The provider's, without streaming: a batch item is answered whole."""
        return attrs.evolve(capabilities_of(self._inner, model), streaming=False)

    def stream(self, request: LLMRequest) -> StreamContext:
        """:meth:`complete`, then the whole answer as one stream (a batch has no partial answers)."""
        return stream_from_complete(self, request)

    # -- a call ---------------------------------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The request's answer, sent as one line of a vendor batch and read back when the batch ends.

        Cancellation: the call leaves its batch (shielded) and the cancellation is re-raised.  A line whose batch
        is still collecting is withdrawn (nothing billed, which is noted for the run); one whose batch is being
        sent or was submitted runs and is billed — noted for the run as a call cut short, at the batch price — and
        ``batch.left`` says where its answer is (:meth:`collect` reads it back).
        """
        line, digest = self._line(request)
        if line.size + LINE_ENVELOPE + BATCH_ENVELOPE > self._api.max_bytes:
            raise self._too_large(line)
        waiter = _Waiter(line, digest, journal_of_runtime())
        batch = await self._resume(waiter) if waiter.journal is not None else None
        if batch is None:
            batch = self._collect(waiter)
        try:
            await self._wait(batch, waiter)
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()) and waiter.outcome is None:
                # It leaves a submitted batch: its item runs and is billed.  Noted for the run to charge — its prompt,
                # at the batch price (the answer it will not read is not known).  Withdrawn before the submission:
                # nothing is billed, which is noted too (the ProviderActor around would otherwise guess a call).
                # (Cancelled while its batch is being sent, its line is in it: billed, should the vendor make it.)
                billed = () if batch.state == "collecting" else (
                    CutShort(self.name, line.model, estimate_tokens(line.request or request, max_output=0), batch=True),
                )
                note_cut_short(request, billed)
                if batch.id is not None:  # where its answer is: collect(batch_id) reads it back (custom_id's item)
                    emit("batch.left", batch_id=batch.id, custom_id=line.custom_id, model=line.model)
            with anyio.CancelScope(shield=True):
                await self._leave(batch, waiter)
            raise
        if waiter.parked and waiter.entry is not None:
            with anyio.CancelScope(shield=True):
                await self._parking.unpark(waiter.journal, digest, waiter.entry)
        outcome = waiter.outcome
        if isinstance(outcome, LLMResponse):
            return outcome
        assert outcome is not None
        raise outcome

    # -- a batch by its id -----------------------------------------------------------------------------------

    async def collect(
        self, batch_id: str, *, model: str | None = None, max_wait: float | None = None
    ) -> dict[str, LLMResponse | ProviderError]:
        """The answers of a vendor batch, found by its id: each item's, under its custom id.

        For a batch no call waits on any more — its process died without a journal, its callers were cancelled
        (event ``batch.left``), or its submission ended in ``BatchError(reason="unconfirmed")`` and the batch was
        then found in the vendor's batch list — so that the answers paid for are not lost.  ``batch_id`` is the
        vendor's (in ``batch.submitted`` and ``batch.left``, ``BatchError.batch_id``; Gemini's ``batches/…`` name
        is taken too).  Nothing is submitted, and the batch is never cancelled: reading it again is free.

        The batch's status is read at once, then every ``poll_every`` seconds while it runs, for at most
        ``max_wait`` seconds (the provider's by default).  Its results are read as a waiting call's are: a results
        file streamed a line at a time (a line past twice ``max_response_bytes`` skipped), Gemini's status answer
        read up to 16 × ``max_response_bytes``, each answer decoded by the wire's own decoder — without the request
        it answered, which a batch read by id does not carry — and marked ``provider_data["batch"]`` (priced at the
        batch rate).  ``model``: the model errors name, and a decoded answer's when the vendor's says none
        (default: the provider's default model).

        Each item is an ``LLMResponse`` or the typed error a waiting call would have got: the vendor's error for
        it as the wire classifies it, or a :class:`BatchError` (``expired``, ``cancelled``, ``missing``).  An
        item the vendor's results do not list is not in the mapping.  Keys are the custom ids (this provider's
        map back to their requests with :meth:`is_item_of`); Gemini answers in order without them, so its items
        are keyed by position, ``"0"``, ``"1"``, … (a custom id ``aa3-…`` is position 3).

        :raises BatchError: ``reason="failed"``: the vendor failed the whole batch; ``"timeout"``: still running
            after ``max_wait`` (not retryable; the batch runs on — collect it later); ``"poll"``: the batch or its
            results could not be read to the end (transient: collect it again).
        :raises ProviderError: the vendor's verdict on reading it (a 404: no such batch; a refused key).
        :raises ValueError: ``batch_id`` is not a batch id (only letters, digits, ``_``, ``-``, ``.``), or
            ``max_wait`` is not a positive, finite number of seconds.

        Cancellation: propagates at once, unchanged (between two polls, or mid-read); the batch is left as it is at
        the vendor, never cancelled — collect it again later.
        """
        if not isinstance(batch_id, str) or not _BATCH_ID.fullmatch(batch_id.removeprefix("batches/")):
            # It goes into the vendor's URL, with the provider's key: a "/" or "?" would reach another endpoint.
            raise ValueError(f"batch_id must be a vendor's batch id (letters, digits, _ - .), not {batch_id!r}")
        wait = self.max_wait if max_wait is None else max_wait
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 < wait < math.inf:
            raise ValueError(f"max_wait must be a positive, finite number of seconds, not {max_wait!r}")
        name = batch_id.removeprefix("batches/")
        model = model or default_model_of(self._inner) or ""
        deadline = self._clock() + wait
        failures = 0
        while True:
            pause = self.poll_every
            status: Status | None = None
            try:
                with anyio.move_on_after(max(0.0, deadline - self._clock())):  # a read that hangs: max_wait bounds it
                    status = await self._api.status(name, model)
            except Exception as exc:
                error = as_provider_error(exc, self._inner, model)
                failures += 1
                if not error.retryable or failures >= MAX_POLL_FAILURES or self._clock() >= deadline:
                    raise _unread_batch(error, name, model) from None
                log.info("batch %s: reading it failed (%s); trying again", name, redact(str(error)))
                pause = self._backoff(failures, error)
            else:
                if status is not None:
                    failures = 0
                    if status.done:
                        break
                if self._clock() >= deadline:
                    raise BatchError(
                        f"batch {name} was still running after max_wait ({wait:g} s); it runs on at the vendor: "
                        "collect it again later", provider=self.name, reason="timeout", model=model, batch_id=name,
                        kind=ErrorKind.transient, retryable=False)
            await anyio.sleep(max(0.0, min(pause, deadline - self._clock())))
        if status.failure is not None:
            raise failed(self.name, name, status, model)
        lines = OpenLines(model)
        try:
            outcomes = await self._api.results(name, status, lines, self._results_deadline(deadline))
        except Exception as exc:
            raise _unread_batch(as_provider_error(exc, self._inner, model), name, model) from None
        if lines.failure is not None:
            raise _unread_batch(lines.failure, name, model)
        answered = sum(isinstance(outcome, LLMResponse) for outcome in outcomes.values())
        emit("batch.collected", batch_id=name, state=status.state, answered=answered, failed=len(outcomes) - answered)
        return outcomes

    def is_item_of(self, custom_id: str, request: LLMRequest) -> bool:
        """Whether ``custom_id`` is the id this provider gives ``request``'s item in a batch: what maps the answers
        :meth:`collect` returns back to the requests that asked them.

        A custom id carries a digest of the request as it is sent (provider, base URL, model, encoded body), so
        the same request made again matches, and any other does not.  (Gemini's items, keyed by position, do not.)
        :raises ProviderError: ``request`` cannot be sent by this provider (no model, say), as :meth:`complete`.
        """
        _, digest = self._line(request)
        return isinstance(custom_id, str) and index_of(custom_id) >= 0 and custom_id.endswith("-" + digest[:24])

    def _line(self, request: LLMRequest) -> tuple[Line, str]:
        """The request as a batch line (checked and encoded as a single call would be) and its digest."""
        provider = self._http_provider
        request = provider.with_defaults(request)
        model = resolve_model(provider, request)
        check_forced_tool_choice(provider, request, model)
        check_response_format(provider, request, model)
        try:
            body = provider.codec.encode_request(request, model, stream=False)
            raw = dumps(body)
        except ProviderError:
            raise
        except (TypeError, ValueError, KeyError) as exc:
            raise ProviderError(
                f"the request cannot be encoded for the {provider.codec.wire} wire: {exc}",
                provider=provider.name, model=model, kind=ErrorKind.request,
            ) from exc
        digest = hashlib.sha256(b"\0".join((provider.name.encode(), provider.base_url.encode(), model.encode(), raw)))
        return Line("", body, model, request, len(raw)), digest.hexdigest()

    def _collect(self, waiter: _Waiter) -> _Batch:
        """Add the call's line to its model's collecting batch (a new one when there is none, or it is full)."""
        line = waiter.line
        batch = self._open.get(line.model)
        size = line.size + LINE_ENVELOPE  # its envelope counts against the vendor's limit too (see complete())
        if batch is not None and batch.lines and batch.size + size > self._api.max_bytes - BATCH_ENVELOPE:
            self._close(batch)
            batch = None
        if batch is None:
            batch = self._open[line.model] = _Batch(line.model, self._clock())
        line.custom_id = custom_id(batch.count, waiter.digest)
        batch.count += 1
        batch.lines[line.custom_id] = line
        batch.waiters[line.custom_id] = waiter
        batch.size += size
        if len(batch.lines) >= self.max_requests:
            self._close(batch)
        return batch

    def _close(self, batch: _Batch) -> None:
        """The batch takes no more lines: it is submitted now (its driver wakes)."""
        if self._open.get(batch.model) is batch:
            del self._open[batch.model]
        batch.full.set()

    async def _resume(self, waiter: _Waiter) -> _Batch | None:
        """After a restart: the batch this very request was submitted in (parked in the journal), or ``None``."""
        entry = await self._parking.find(waiter.journal, waiter.digest)
        if entry is None:
            return None
        batch = self._submitted.get(entry.batch_id)
        if batch is None or batch.state == "ended":
            batch = self._submitted[entry.batch_id] = _Batch(waiter.line.model, self._clock())
            batch.id, batch.state = entry.batch_id, "submitted"
            batch.deadline = self._clock() + self.max_wait
        waiter.line.custom_id = entry.custom_id
        waiter.entry, waiter.parked = entry, True
        batch.lines[entry.custom_id] = waiter.line
        batch.waiters[entry.custom_id] = waiter
        emit("batch.resumed", batch_id=entry.batch_id, custom_id=entry.custom_id, key=waiter.digest)
        return batch

    async def _wait(self, batch: _Batch, waiter: _Waiter) -> None:
        """Until the call has its outcome: park it once submitted, drive the batch when nobody does, else wait."""
        while waiter.outcome is None:
            if batch.id is not None and waiter.journal is not None and waiter.entry is None:
                waiter.entry = Entry(batch.id, waiter.line.custom_id)  # tried once: a failed write is logged
                with anyio.CancelScope(shield=True):
                    waiter.parked = await self._parking.park(waiter.journal, waiter.digest, waiter.entry)
                if waiter.parked:
                    emit("batch.parked", batch_id=batch.id, custom_id=waiter.line.custom_id, key=waiter.digest)
                continue
            if batch.driven:
                await batch.wake.wait()
                continue
            batch.driven = True
            try:
                await self._drive(batch)
            finally:
                batch.driven = False
                batch.poke()

    async def _leave(self, batch: _Batch, waiter: _Waiter) -> None:
        """A cancelled call: its line withdrawn if its batch is still collecting, its parked entry removed."""
        custom = waiter.line.custom_id
        if batch.waiters.get(custom) is waiter:
            del batch.waiters[custom]
            if batch.state == "collecting":
                line = batch.lines.pop(custom, None)
                batch.size -= line.size + LINE_ENVELOPE if line is not None else 0
                if not batch.lines and self._open.get(batch.model) is batch:
                    del self._open[batch.model]  # the next call opens a window of its own
        if batch.state == "submitted" and not batch.waiters and batch.id is not None:
            self._submitted.pop(batch.id, None)  # nobody waits: a later request of it adopts it anew
        if waiter.entry is not None:
            if waiter.parked:
                await self._parking.unpark(waiter.journal, waiter.digest, waiter.entry)
            else:
                self._parking.release(waiter.digest, waiter.entry)

    # -- driving a batch ------------------------------------------------------------------------------------

    async def _drive(self, batch: _Batch) -> None:
        """One phase of the batch, in a waiting call's task: collect and submit it, or poll it to its end."""
        if batch.state == "collecting":
            with anyio.move_on_after(max(0.0, batch.opened + self.window - self._clock())):
                await batch.full.wait()
            self._close(batch)
            if not batch.lines:  # every call withdrew
                batch.state = "ended"
                return
            receipt = Receipt()
            batch.state = "submitting"  # its lines are sent from here on: a call that leaves now is not withdrawn
            with anyio.CancelScope(shield=True), anyio.move_on_after(SUBMIT_BOUND) as bound:
                await self._submit(batch, receipt)
            if bound.cancelled_caught and batch.state == "submitting":
                words = f"submitting the batch took longer than {SUBMIT_BOUND:g} s"
                if receipt.creating:  # the vendor may have created it: never sent again (see _unconfirmed)
                    self._end(batch, self._unconfirmed(words, receipt))
                else:  # only the upload ran: nothing was created, a retry is safe
                    self._end(batch, lambda line: BatchError(
                        words, provider=self.name, reason="missing", model=line.model, custom_id=line.custom_id))
            return
        if batch.state == "submitted":
            await self._poll(batch)

    async def _submit(self, batch: _Batch, receipt: Receipt) -> None:
        # Numbered again in the order sent: a withdrawn line left a gap, and Gemini answers by position.
        waiters = list(batch.waiters.values())
        batch.lines, batch.waiters = {}, {}
        for position, waiter in enumerate(waiters):
            waiter.line.custom_id = custom_id(position, waiter.digest)
            batch.lines[waiter.line.custom_id] = waiter.line
            batch.waiters[waiter.line.custom_id] = waiter
        lines = list(batch.lines.values())
        try:
            batch_id = await self._api.submit(batch.model, lines, receipt)
        except Exception as exc:
            error = as_provider_error(exc, self._inner, batch.model)
            if receipt.creating:
                self._end(batch, self._unconfirmed(error.message, receipt, error))
            else:
                self._end(batch, lambda line: error)
            return
        batch.id, batch.state = batch_id, "submitted"
        batch.next_poll = self._clock() + self.poll_every
        batch.deadline = self._clock() + self.max_wait
        self._submitted[batch_id] = batch
        self.submitted += 1
        emit("batch.submitted", batch_id=batch_id, model=batch.model, size=len(lines))

    def _unconfirmed(
        self, what: str, receipt: Receipt, cause: ProviderError | None = None
    ) -> Callable[[Line], Outcome]:
        """Each call's error when the create request may have been accepted but no batch id came back.

        The vendors take no idempotency key on batch creation, and a batch's id is the only way to find it: the
        same lines submitted again would make a second batch of the same work, billed twice.  So the error is
        final — transient, but not retryable (``with_retry`` does not send it again) — and says why, and how to
        find the batch (OpenAI's: by its input file, which its batch list shows); found, :meth:`collect` reads
        its answers by the batch's id, each under the ``custom_id`` the error carries.
        """
        name = self.name
        where = (f"the one whose input_file_id is {receipt.input_file}" if receipt.input_file is not None
                 else "one made at this time")

        def error(line: Line) -> Outcome:
            failure = BatchError(
                f"the batch may have been created at the vendor, but its id never came back ({what}); its requests "
                "are not submitted again, which could bill the same work twice — look for it in the vendor's batch "
                f"list ({where}) and read its answers with BatchProvider.collect(batch_id) (this request's item: "
                f"{line.custom_id})", provider=name, reason="unconfirmed", model=line.model, custom_id=line.custom_id,
                kind=ErrorKind.transient, retryable=False)
            if cause is not None:
                failure.__cause__ = cause
            return failure

        return error

    async def _poll(self, batch: _Batch) -> None:
        """Poll until the batch ends, then deliver its outcomes."""
        assert batch.id is not None
        while batch.waiters:
            if self._clock() >= batch.deadline:
                last: Status | None = None
                with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND):
                    last = await self._give_up(batch)
                if last is not None and last.done:
                    await self._finish(batch, last)  # what it answered before the cancel (not under the bound)
                else:
                    self._timed_out(batch)
                return
            await anyio.sleep(max(0.0, min(batch.next_poll, batch.deadline) - self._clock()))
            if self._clock() < batch.next_poll:
                continue  # woken by the deadline
            batch.next_poll = self._clock() + self.poll_every
            status: Status | None = None
            try:
                # A read that hangs (a client without a read timeout) must not outlast max_wait: the loop gives up.
                with anyio.move_on_after(max(0.0, batch.deadline - self._clock())):
                    status = await self._api.status(batch.id, batch.model)
            except Exception as exc:
                error = as_provider_error(exc, self._inner, batch.model)
                batch.failures += 1
                if error.retryable and batch.failures < MAX_POLL_FAILURES:
                    log.info("batch %s: polling failed (%s); trying again", batch.id, redact(str(error)))
                    batch.next_poll = self._clock() + self._backoff(batch.failures, error)
                    continue
                self._end(batch, _failing(error, batch))
                return
            if status is None:
                continue  # max_wait passed during the read
            batch.failures = 0
            if status.done:
                await self._finish(batch, status)
                return

    def _backoff(self, failures: int, error: ProviderError) -> float:
        """Seconds to the next status read after ``failures`` failed ones in a row: ``poll_every`` after the first two,
        then doubling, up to ``MAX_POLL_BACKOFF`` (or ``poll_every`` when longer) — never sooner than the vendor's
        ``Retry-After``.  A vendor whose status endpoint is down for minutes must not fail a batch that still runs,
        and bills: ``MAX_POLL_FAILURES`` reads then span hours, not ten ``poll_every``s."""
        wait = min(self.poll_every * 2.0 ** max(0, failures - 2), max(self.poll_every, MAX_POLL_BACKOFF))
        return max(wait, error.retry_after or 0.0)

    def _too_large(self, line: Line) -> BatchError:
        """The error of a request that no batch of this vendor can hold: refused before anything is sent."""
        return BatchError(
            f"the request is {line.size} bytes as sent: with its envelope it is past the most a batch of this vendor "
            f"may hold ({self._api.max_bytes} bytes); send it as a single call instead of through the batch API",
            provider=self.name, reason="too_large", model=line.model, kind=ErrorKind.request, retryable=False)

    async def _give_up(self, batch: _Batch) -> Status | None:
        """``max_wait`` passed: cancel the batch at the vendor (nobody will collect it), then read its status once
        more — a batch that ended meanwhile (or at the cancel) still delivers what it answered.  ``None`` when the
        vendor could not be reached (logged: the batch may run on, and bill)."""
        assert batch.id is not None
        try:
            await self._api.cancel(batch.id, batch.model)
            emit("batch.cancelled", batch_id=batch.id, model=batch.model, reason="max_wait")
            return await self._api.status(batch.id, batch.model)
        except Exception as exc:
            log.warning("batch %s: still running after max_wait (%g s), and cancelling it failed: %s", batch.id,
                        self.max_wait, redact(str(as_provider_error(exc, self._inner, batch.model))))
            return None

    def _timed_out(self, batch: _Batch) -> None:
        batch_id, wait = batch.id, self.max_wait
        self._end(batch, lambda line: BatchError(
            f"batch {batch_id} was still running after max_wait ({wait:g} s); it was cancelled at the vendor",
            provider=self.name, reason="timeout", model=line.model, batch_id=batch_id, custom_id=line.custom_id,
            kind=ErrorKind.transient, retryable=False), state="timeout")

    async def _finish(self, batch: _Batch, status: Status) -> None:
        assert batch.id is not None
        batch_id = batch.id
        if status.failure is not None:
            self._end(batch, lambda line: failed(self.name, batch_id, status, line.model, line.custom_id))
            return
        deadline = self._results_deadline(batch.deadline)
        try:
            read = dict(batch.lines)
            outcomes = await self._api.results(batch_id, status, read, deadline)
            # A request resumed while the results were read (a recovered run joining the batch) is read for too:
            # its item was answered, and paid for — not "missing" because the read began before it came.
            while joined := {key: line for key, line in batch.lines.items() if key not in read}:
                read.update(joined)
                outcomes.update(await self._api.results(batch_id, status, joined, deadline))
        except Exception as exc:
            error = as_provider_error(exc, self._inner, batch.model)
            self._end(batch, _failing(error, batch))
            return
        self._end(batch, lambda line: outcomes.get(line.custom_id) or missing(self.name, line, batch_id, status),
                  state=status.state)

    def _results_deadline(self, deadline: float) -> float:
        """When reading an ended batch's results stops: at ``deadline`` (its ``max_wait``'s), and ``RESULTS_BOUND``
        from now at the soonest — a results file that stalls must not keep its calls for ever (a client without a
        read timeout), nor one ended just before ``max_wait`` lose its answers, paid for, to a bound of seconds."""
        return max(deadline, self._clock() + RESULTS_BOUND)

    def _end(self, batch: _Batch, outcome: Callable[[Line], Outcome], *, state: str | None = None) -> None:
        """Every waiting call's outcome; the batch is over."""
        failed = 0
        handed: set[int] = set()
        for waiter in batch.waiters.values():
            waiter.outcome = outcome(waiter.line)
            if isinstance(waiter.outcome, ProviderError):
                if id(waiter.outcome) in handed:  # one error for every call (a refused submission): each its own
                    waiter.outcome = _own_copy(waiter.outcome)
                handed.add(id(waiter.outcome))
            failed += not isinstance(waiter.outcome, LLMResponse)
        batch.state = "ended"
        if batch.id is not None:
            if self._submitted.get(batch.id) is batch:
                del self._submitted[batch.id]
            emit("batch.ended", batch_id=batch.id, state=state or "failed", answered=len(batch.waiters) - failed,
                 failed=failed)
        batch.poke()

    def __repr__(self) -> str:
        return (f"BatchProvider({self._inner!r}, window={self.window:g}, max_requests={self.max_requests}, "
                f"poll_every={self.poll_every:g})")


def _unread_batch(error: ProviderError, batch_id: str, model: str) -> ProviderError:
    """The error of a :meth:`BatchProvider.collect` whose batch (or results) could not be read to the end: the
    reading's own, if it is the vendor's verdict (a 404, a refused key), else a retryable ``BatchError("poll")``."""
    if not error.retryable:
        return error
    failure = BatchError(
        f"batch {batch_id} could not be read: {error.message}", provider=error.provider, reason="poll", model=model,
        batch_id=batch_id, kind=ErrorKind.transient, retryable=True,
    )
    failure.__cause__ = error
    return failure


def _own_copy(error: ProviderError) -> ProviderError:
    """A copy of ``error`` for one more call: an exception object raised in many tasks would gather every raise's
    traceback, and a note one caller adds to it would show on the others'."""
    own = copy.copy(error)  # ProviderError.__reduce__: its fields, without a traceback
    own.__cause__, own.__suppress_context__ = error.__cause__, error.__suppress_context__
    notes = getattr(error, "__notes__", None)
    if isinstance(notes, list):
        own.__notes__ = list(notes)
    return own


def _failing(error: ProviderError, batch: _Batch) -> Callable[[Line], Outcome]:
    """Each waiting call's error when its batch could not be read to its end (:func:`._api.unreadable`)."""
    return lambda line: unreadable(error, batch.id, line)


# The package root serves this class on first use, as agentactors.<name> (where users import it from): it is
# relabelled here, so reprs, tracebacks and pickles say so whichever import loaded this module first.
_reexport.adopt(globals(), ["BatchProvider"], "agentactors")
