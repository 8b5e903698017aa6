"""The exception tree: every error this library raises, the signals user code raises, and the one taxonomy of
provider failures.

Every library error derives from :class:`AgentActorsError`, so ``except AgentActorsError`` catches
anything the library raises on purpose (cancellation aside: that is anyio's own exception).  Below it, one
base per layer a failure comes from: :class:`ProviderError` (a model call), :class:`ActorError` (the actor
kernel), :class:`RunError` (a run of the tool loop), :class:`SessionError` (a session).  Every error's name
ends in ``Error``; a class renamed to follow that rule keeps its old name as an alias (the same class, so
``except ActorStopped`` still catches it), drawn after ``was``.  The whole tree; a note names a class's other
bases and, when it is not defined here, where it lives::

    AgentActorsError
    ├── ProviderError
    │   ├── MalformedResponseError
    │   ├── ResponseTooLargeError
    │   ├── UnsupportedToolChoiceError
    │   ├── UnsupportedContentError
    │   ├── UnsupportedSettingError
    │   ├── UnsupportedToolNameError        agentactors.providers.errors (defined in providers._settings)
    │   ├── CircuitOpenError
    │   ├── StreamInterruptedError
    │   ├── ProviderTimeoutError            was ProviderTimeout
    │   ├── OverloadedError                 was Overloaded; a ProviderActor refused a request it could not serve in time
    │   ├── AllProvidersFailedError         also an ExceptionGroup
    │   ├── ScriptExhaustedError            agentactors.providers.scripted: a ScriptedProvider ran out of script
    │   ├── BatchError                      agentactors.resilience.batch: a batch item or batch got no answer
    │   └── BatchUnsupportedError           agentactors.resilience.batch: a provider whose wire has no batch API
    ├── ActorError                      the actor kernel: an ask that got no answer
    │   ├── AskTimeoutError                 was AskTimeout; also a TimeoutError
    │   ├── ActorStoppedError               was ActorStopped
    │   ├── ActorDeadlockError              also a RuntimeError; an ask (or tell) an actor's handler makes to itself
    │   └── WrongEventLoopError             also a RuntimeError; an actor used outside its runtime's event loop
    ├── RunError                        a run of the tool loop ended without the answer it was for
    │   ├── RunDeadlineExceededError        was RunDeadlineExceeded; in RunResult.error, never raised by a run
    │   ├── ToolStatusError                 a tool status routed to "raise"
    │   ├── OutputValidationError           in RunResult.error: output_retries ran out
    │   ├── DelegationError                 a delegated (child) run failed: the calling tool's status error
    │   ├── CostLimitExceededError          was CostLimitExceeded; in RunResult.error: the run passed its cost_limit
    │   ├── RunInterruptedError             in RunResult.error: run.interrupt() ended the run after its step
    │   ├── RunNotFoundError                rt.run_ref: no live run has that id (finished, or never here)
    │   ├── RunFinishedError                a control message (steer, interrupt, approve...) to a finished run
    │   ├── CallNotPendingError             also a ValueError; approve/deny of a call not awaiting approval
    │   └── PauseConsumedError              agent.resume of a pause already resumed in this process: nothing ran
    ├── SessionError
    │   ├── SessionConflictError            another turn (another process) committed first, or a pause was taken
    │   ├── SessionPausedError              a turn was sent while the session awaits decisions
    │   ├── SessionFormatError              also a ValueError; a stored session this version cannot read
    │   ├── SqliteStoreError                also an OperationalError (sqlite3); (sessions.sqlite) the database failed
    │   │   └── SqliteStoreConnectionError      also a ConnectionError; a path SQLite cannot open as a database
    │   └── PostgresStoreError              (sessions.postgres) the database failed, raised also as psycopg's error
    │       └── PostgresStoreConnectionError    also a ConnectionError; a connection that could not be opened
    ├── JournalError                    agentactors.journal (defined in journal.records): durable runs, replay, fork
    │   ├── RunNotRecordedError             also a LookupError; the source holds no such run
    │   ├── StepOutOfRangeError             also a ValueError; fork(..., at_step) past the recorded steps
    │   ├── ReplayDivergedError             the replayed run asked for more than its recording holds
    │   ├── ForkAgentMissingError           also a TypeError; fork(agent=None) found no agent of the recorded name
    │   ├── JournalFormatError              also a ValueError; (journal.store) a row it cannot keep or read back
    │   ├── RecoveryError                   rt.recover(): runs it could not finish, raised after it finished the rest
    │   ├── LeaseLostError                  (journal.store) another recoverer took the run over: commit refused
    │   ├── SqliteJournalError              also an OperationalError (sqlite3); (journal.sqlite) the database failed
    │   │   └── SqliteJournalConnectionError    also a ConnectionError; a path SQLite cannot open as a database
    │   └── PostgresJournalError            (journal.postgres) the database failed, raised also as psycopg's error
    │       └── PostgresJournalConnectionError  also a ConnectionError; a connection that could not be opened
    ├── ConversionError                 also a ValueError; agentactors.tools.schema
    ├── EventRecordError                also a ValueError; agentactors.explain: a JSONL record line that is not an event
    ├── ToolsetError                    agentactors.tools (defined in tools.toolset)
    │   └── ToolNameClashError              also a ValueError; agentactors.tools (defined in tools.toolset)
    ├── MCPToolError                    agentactors.mcp (defined in mcp._results): a failed MCP call
    ├── MCPConnectionError              agentactors.mcp._connection, never leaves agentactors.mcp
    ├── GeminiSchemaError               also a ValueError; agentactors.providers.gemini (defined in .schema)
    ├── WorkerLostError                 was WorkerLost; agentactors.ray: a run lost with its Ray worker
    │   └── WorkerUnavailableError      agentactors.ray: its call unanswered (unreachable, event loop blocked)
    ├── RemoteError                     agentactors.ray: a worker's exception that did not pickle
    ├── VersionMismatchError            was VersionMismatch; agentactors.ray: a worker on another version
    └── LedgerUnavailableError          was LedgerUnavailable; agentactors.ray.ledger, never leaves the lease client

Signals are not failures: user code raises them to steer a run, and the run turns them into what the model
reads.  They are kept outside the tree (as pydantic-ai keeps ``ModelRetry``), so ``except AgentActorsError``
around a validator or a tool body does not swallow them::

    Signal
    ├── ModelRetry                      from an output validator or a tool: ask the model again with a message
    └── ToolDenied                      from a tool, to refuse the call itself: status denied
        └── DelegationLimitError            agent.as_tool(): a child refused before it started (max_runs, max_depth)

Outside both: a stand-in that is never raised, control flow that never leaves its package (a tool's timeout, the
endpoints' refusals), and two errors that
never reach a user of the library (a test double's and the demo's)::

    Exception
    ├── RedactedException               in a cause chain, for a foreign exception whose text held a credential
    ├── TimedOut                        agentactors.tools._invoke: a tool call past its timeout, never leaves tools
    ├── BadRequest                      agentactors.serve._openai_input: answered with a 400, never leaves serve
    ├── BodyError                       agentactors.serve._http: a body the app cannot read, answered with a 400
    ├── Disconnected                    agentactors.serve._http: the client left before its body arrived
    ├── ProtocolError                   providers.http._response_parser: raised as httpx's RemoteProtocolError
    ├── InvalidInput                    agentactors.serve._agui_input: answered with a 422, never leaves serve
    ├── ResumeRefused                   agentactors.serve._agui_input: answered with RUN_ERROR, never leaves serve
    ├── ValueError
    │   └── JsonBoundError                  agentactors._json: JSON past the depth and size policy, never leaves an edge
    ├── WireRejection                   the fake vendor's 4xx, never leaves agentactors.testing
    └── RuntimeError
        ├── LiveUnavailable             agentactors._demo: the demo's --live without a key
        ├── RecordNotWritten            agentactors._demo: the demo's event record failed to write after the runs
        └── VendorGone                  agentactors._demo.vendor: the demo's vendor child died or stopped answering

The drawing is checked (``tests/unit/test_errors_tree.py``): every exception class the package defines
appears in it once, under one of its real bases, with its other bases noted, in the drawing of its kind.
Private exceptions (a leading underscore) are control flow caught inside the module that raises them; they
are not library errors and are not drawn.

A provider failure is a :class:`ProviderError` whose ``kind`` says whose fault it is and whose
``retryable`` says whether asking again can help.  The resilience decorators derive every decision
(retry, fall back, count in a breaker) from these two fields and nothing else:

========== ===== ======== ==============
kind       retry fallback breaker counts
========== ===== ======== ==============
request    no    no       no
account    no    opt-in   no
context    no    opt-in   no
content_   no    opt-in   no
policy
transient  yes   yes      yes
circuit_   no    yes      no
open
========== ===== ======== ==============

Turning an HTTP failure into a kind is the providers' job:
:mod:`agentactors.providers.errors` (``classify_http_error``, ``classify_exception``, also importable
from :mod:`agentactors.providers`).  Their old names here still resolve, with a :class:`DeprecationWarning`
(:mod:`agentactors._deprecate` keeps the table), for one release.

No credential ever appears in an error's ``str``, ``repr``, notes or ``body_excerpt``: providers
register their keys with :func:`~agentactors.redaction.register_secret` and every text that enters an
error passes through :func:`~agentactors.redaction.redact`.  Nor in its cause chain: where the library
wraps a foreign exception (httpx's, h11's, aiohttp's), :func:`~agentactors._scrub.scrub_chain` keeps
it as the cause only when no text in its chain holds a credential, and otherwise puts a
:class:`RedactedException` in its place.  ``scrub_chain`` lives in :mod:`agentactors._scrub` (it is
about what is done with foreign exceptions, not the tree); ``agentactors.errors.scrub_chain`` is its
public name, served on first use without a warning.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

# redact / register_secret are re-exported: ``from agentactors.errors import redact`` predates
# agentactors.redaction and is still how much of the package imports them.
from .redaction import excerpt, redact, register_secret

__all__ = [
    "ActorDeadlockError",
    "ActorError",
    "ActorStoppedError",
    "AgentActorsError",
    "AllProvidersFailedError",
    "AskTimeoutError",
    "CallNotPendingError",
    "CircuitOpenError",
    "CostLimitExceededError",
    "DelegationError",
    "DelegationLimitError",
    "ErrorKind",
    "MalformedResponseError",
    "ModelRetry",
    "OutputValidationError",
    "OverloadedError",
    "PauseConsumedError",
    "ProviderError",
    "ProviderTimeoutError",
    "RedactedException",
    "ResponseTooLargeError",
    "RunDeadlineExceededError",
    "RunError",
    "RunFinishedError",
    "RunInterruptedError",
    "RunNotFoundError",
    "SessionConflictError",
    "SessionError",
    "SessionFormatError",
    "SessionPausedError",
    "Signal",
    "StreamInterruptedError",
    "ToolDenied",
    "ToolStatusError",
    "UnsupportedContentError",
    "UnsupportedSettingError",
    "UnsupportedToolChoiceError",
    "WrongEventLoopError",
    "redact",
    "register_secret",
    # the old names of renamed errors: aliases of the classes above
    "ActorStopped",
    "AskTimeout",
    "CostLimitExceeded",
    "Overloaded",
    "ProviderTimeout",
    "RunDeadlineExceeded",
]

_EXCERPT_LIMIT = 500


class ErrorKind(enum.StrEnum):
    """Whose fault a failure is; see the module docstring for what each kind means."""

    request = "request"
    account = "account"
    context = "context"
    content_policy = "content_policy"
    transient = "transient"
    circuit_open = "circuit_open"

    @property
    def retryable(self) -> bool:
        """Whether errors of this kind are retryable by default (only ``transient`` is)."""
        return self is ErrorKind.transient


def _excerpt(body: str | bytes | None) -> str | None:
    if body is None:
        return None
    # Cut before redacting: an excerpt of a 60 MB page costs what one of 500 characters costs.
    return excerpt(body, _EXCERPT_LIMIT)


# --- the hierarchy ------------------------------------------------------------------------------


class AgentActorsError(Exception):
    """Base class of every error this library raises (cancellation aside).

    Its ``args`` — and so its ``str()``, its ``repr()`` and what a pickle carries to another process (a Ray
    driver) — are redacted when it is built (:func:`~agentactors.redaction.redact`: registered secrets and
    key-shaped strings), as are its notes: a message that quotes a key, a header or a URL with a token in it
    shows ``[REDACTED]`` wherever the error goes.  Once, when it is built (a few microseconds, on a failure
    path), not each time it is shown: an error kept in ``RunResult.error`` is shown and logged often.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*_redacted(args))

    def add_note(self, note: str) -> None:
        """Add a note, credentials removed (notes show in tracebacks)."""
        super().add_note(redact(note))


def _redacted(args: tuple[object, ...]) -> tuple[object, ...]:
    """``args`` with every text redacted: a str itself, anything else by what ``str()`` shows of it.

    Not a str (an exception, a path, a mapping passed as the message): kept as it is when its text holds
    nothing to redact, else replaced by its redacted text — what ``str(error)`` shows is what it was, less
    the credential.  Numbers and ``None`` are kept without a look.
    """
    if len(args) == 1 and type(args[0]) is str:  # the usual error: one message
        return (redact(args[0]),)
    out: list[object] = []
    for arg in args:
        if type(arg) is str:
            out.append(redact(arg))
        elif arg is None or isinstance(arg, bool | int | float):
            out.append(arg)
        else:
            try:
                text = str(arg)
            except Exception:  # an object whose __str__ raises: it shows nothing, so it leaks nothing
                out.append(arg)
                continue
            clean = redact(text)
            out.append(arg if clean == text else clean)
    return tuple(out)


class ProviderError(AgentActorsError):
    """A model call failed.

    :param provider: the provider's name (``"openai"``, a fallback member's name, ...).
    :param kind: whose fault it is (:class:`ErrorKind`; its string value is accepted).
    :param model: the model called, when known.
    :param status: the HTTP status, when there was one.
    :param retry_after: seconds the vendor asked us to wait, relative.
    :param retryable: ``None`` derives it from ``kind`` (only transient is retryable).
    :param request_id: the vendor's request id, for support tickets.
    :param body_excerpt: the start of the vendor's error body, credentials removed.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        kind: ErrorKind | str,
        model: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        request_id: str | None = None,
        body_excerpt: str | bytes | None = None,
    ) -> None:
        self._message = redact(str(message))
        self.provider = provider
        self.kind = ErrorKind(kind)
        self.model = model
        self.status = status
        self.retry_after = retry_after if retry_after is None else max(0.0, float(retry_after))
        self.retryable = self.kind.retryable if retryable is None else bool(retryable)
        self.request_id = request_id
        self.body_excerpt = _excerpt(body_excerpt)
        # Past AgentActorsError.__init__: the message is redacted already (once is enough).
        super(AgentActorsError, self).__init__(self._message)

    @property
    def message(self) -> str:
        """The vendor's (or our) message, credentials removed."""
        return self._message

    def __str__(self) -> str:
        where = self.provider + (f"/{self.model}" if self.model else "")
        status = f" HTTP {self.status}" if self.status is not None else ""
        return f"{where}{status} [{self.kind.value}]: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, provider={self.provider!r}, model={self.model!r}, "
            f"status={self.status!r}, kind={self.kind.value!r}, retryable={self.retryable!r}, "
            f"retry_after={self.retry_after!r})"
        )

    def __reduce__(self) -> Any:
        # Keep errors picklable (Ray moves them between processes).
        state = dict(self.__dict__)
        return (_rebuild, (type(self), state))


def _rebuild(cls: type[ProviderError], state: dict[str, Any]) -> ProviderError:
    err = cls.__new__(cls)
    Exception.__init__(err, state.get("_message", ""))
    err.__dict__.update(state)
    return err


class MalformedResponseError(ProviderError):
    """The vendor answered with something its wire does not allow (transient: asking again may help)."""

    def __init__(self, message: str, *, provider: str, model: str | None = None, **kw: Any) -> None:
        kw.setdefault("kind", ErrorKind.transient)
        super().__init__(f"malformed vendor response: {message}", provider=provider, model=model, **kw)


class ResponseTooLargeError(ProviderError):
    """The vendor's response went past a configured size limit; it was not read further.

    ``limit`` names the limit (``"max_response_bytes"``, ``"max_sse_line_bytes"`` or
    ``"max_event_bytes"``) and ``limit_bytes`` its value.  The vendor's fault, so kind
    ``transient`` (a breaker counts it, a fallback may move on), but not retryable by
    default: asking the same vendor the same thing tends to produce the same runaway answer,
    and every attempt reads up to the limit again.
    """

    def __init__(
        self, message: str, *, provider: str, model: str | None = None, limit: str, limit_bytes: int, **kw: Any
    ) -> None:
        kw.setdefault("kind", ErrorKind.transient)
        kw.setdefault("retryable", False)
        super().__init__(message, provider=provider, model=model, **kw)
        self.limit = limit
        self.limit_bytes = limit_bytes


class UnsupportedToolChoiceError(ProviderError):
    """The request forces a tool choice that this provider/model rejects.

    Raised *before anything is sent*.  It is a request fault: no decorator retries
    it, moves it to a fallback, or counts it in a breaker.
    """

    def __init__(self, message: str | None = None, *, provider: str, model: str | None = None) -> None:
        super().__init__(
            message
            or f"model {model!r} of provider {provider!r} does not accept a forced tool choice "
            "('required' or a named tool); use ToolChoice.auto() or a model that supports it",
            provider=provider,
            model=model,
            kind=ErrorKind.request,
            retryable=False,
        )


class UnsupportedContentError(ProviderError):
    """A content part (an image, a document, audio) this wire or model cannot carry, or one over its size limit.

    Raised *before anything is sent*, naming the part (its kind, media type and size, never its payload) and
    the model.  A request fault: never retried, moved to a fallback or counted by a breaker.  ``part`` is the
    part's description.
    """

    def __init__(self, message: str, *, provider: str, model: str | None = None, part: str | None = None) -> None:
        super().__init__(message, provider=provider, model=model, kind=ErrorKind.request, retryable=False)
        self.part = part


class UnsupportedSettingError(ProviderError):
    """A model setting this model cannot take where dropping it would change the meaning, or a conflict.

    E.g. a thinking budget for a model that does not think, a budget over ``max_tokens``, a temperature
    together with Anthropic's extended thinking (``docs/settings.md`` has the table).  Raised *before anything
    is sent*; a request fault.  ``setting`` names the field.
    """

    def __init__(self, message: str, *, provider: str, model: str | None = None, setting: str | None = None) -> None:
        super().__init__(message, provider=provider, model=model, kind=ErrorKind.request, retryable=False)
        self.setting = setting


class CircuitOpenError(ProviderError):
    """A circuit breaker refused the call without calling the provider.

    ``retry_after`` is the number of seconds until a probe may pass;
    ``last_error`` the failure that (last) opened the circuit.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        provider: str,
        model: str | None = None,
        retry_after: float | None = None,
        last_error: BaseException | None = None,
    ) -> None:
        wait = f"; next probe in {retry_after:.3g}s" if retry_after is not None else ""
        super().__init__(
            message or f"circuit open{wait}",
            provider=provider,
            model=model,
            kind=ErrorKind.circuit_open,
            retry_after=retry_after,
            retryable=False,
        )
        self.last_error = last_error


class StreamInterruptedError(ProviderError):
    """A stream failed after its first event.  Never retried or failed over: the consumer saw part of it.

    ``partial_text`` is the answer text delivered before the failure.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str | None = None,
        partial_text: str = "",
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(
            message,
            provider=provider,
            model=model,
            kind=ErrorKind.transient,
            retryable=False,
            status=status,
            request_id=request_id,
        )
        self.partial_text = partial_text


class ProviderTimeoutError(ProviderError):
    """A call took longer than a configured timeout (transient)."""

    def __init__(self, message: str, *, provider: str, model: str | None = None) -> None:
        super().__init__(message, provider=provider, model=model, kind=ErrorKind.transient)


class OverloadedError(ProviderError):
    """A ProviderActor refused a request at once instead of queueing it past its bounds (transient).

    Raised when ``max_waiting`` requests already wait, when the request's wait would exceed
    ``max_wait`` (estimated on arrival, or reached while it waited), or when a computed budget wait is
    beyond any sane bound.  Nothing was sent.  ``retry_after`` estimates the seconds until the actor
    could serve it, so a fallback chain outside the actor, ``with_retry`` or the caller can act on it;
    ``reason`` says which bound refused it (``"max_waiting"``, ``"max_wait"`` or ``"budget"``).
    """

    def __init__(
        self, message: str, *, provider: str, model: str | None = None, retry_after: float | None = None,
        reason: str = "max_wait",
    ) -> None:
        super().__init__(message, provider=provider, model=model, kind=ErrorKind.transient, retry_after=retry_after)
        self.reason = reason


class AllProvidersFailedError(ProviderError, ExceptionGroup):
    """Every member of a fallback chain failed.

    Both an ``ExceptionGroup`` (``except*`` works, ``.exceptions`` lists the
    members' errors in order, primary first) and a :class:`ProviderError` whose
    kind, retryable and retry_after are the last error's.  ``skipped`` names the members the chain
    skipped without calling them (``with_fallback(skip_incapable=True)`` and a forced tool choice they
    cannot carry): a caller that can send the step another way (the typed-results loop) reads it.
    """

    def __new__(cls, message: str, errors: Sequence[Exception], **_: Any) -> Self:
        return super().__new__(cls, message, list(errors))

    def __init__(
        self, message: str, errors: Sequence[Exception], *, provider: str = "fallback", skipped: Sequence[str] = ()
    ) -> None:
        errs = list(errors)
        if not errs:
            raise ValueError("AllProvidersFailedError needs at least one error")
        last = errs[-1]
        last_pe = last if isinstance(last, ProviderError) else None
        ProviderError.__init__(
            self,
            message,
            provider=provider,
            kind=last_pe.kind if last_pe else ErrorKind.transient,
            model=last_pe.model if last_pe else None,
            status=last_pe.status if last_pe else None,
            retry_after=last_pe.retry_after if last_pe else None,
            retryable=last_pe.retryable if last_pe else False,
            request_id=last_pe.request_id if last_pe else None,
        )
        self.errors = tuple(errs)
        self.skipped = tuple(skipped)

    @property
    def exceptions(self) -> tuple[Exception, ...]:
        """The members' errors, in the order they were tried."""
        return self.errors

    def __str__(self) -> str:
        inner = "; ".join(str(e) for e in self.errors)
        return f"{self.message} ({len(self.errors)} errors: {inner})"

    def derive(self, excs: Sequence[Exception]) -> AllProvidersFailedError:  # type: ignore[override]
        """A group of the same type and provider with ``excs`` (what ``except*`` splits build)."""
        return AllProvidersFailedError(self.message, list(excs), provider=self.provider, skipped=self.skipped)

    def __reduce__(self) -> Any:
        state: dict[str, Any] = {"provider": self.provider, "skipped": self.skipped}
        if notes := getattr(self, "__notes__", None):  # notes come back as the other errors' do
            state["__notes__"] = list(notes)
        return (AllProvidersFailedError, (self.message, list(self.errors)), state)

    def __setstate__(self, state: dict[str, Any] | None) -> None:
        if state:
            self.provider = state["provider"]
            self.skipped = tuple(state.get("skipped", ()))
            if "__notes__" in state:
                self.__notes__ = list(state["__notes__"])


class ActorError(AgentActorsError):
    """The actor kernel could not get an answer to an ask (see its subclasses)."""


class AskTimeoutError(ActorError, TimeoutError):
    """An ``ask`` got no answer in time; the work done for it was cancelled."""


class ActorStoppedError(ActorError):
    """The actor was stopped (or stopped itself) and cannot answer."""


class ActorDeadlockError(ActorError, RuntimeError):
    """An actor's own handler asked its actor (or told it, into a full mailbox) where the message would queue
    behind the slot that handler holds (``concurrency=1``, or during ``on_start``): it could never be handled.
    Raised at once, nothing sent; a ``RuntimeError`` too, as a deadlock detected is a program's error."""


class WrongEventLoopError(ActorError, RuntimeError):
    """An actor (or its runtime) used from another event loop than the one that entered its runtime.

    From another thread's loop, hand the call over with ``await rt.call(fn, ...)`` (its message says which
    call); a ``RuntimeError`` too, so code that caught the plain one still does.
    """


class RunError(AgentActorsError):
    """A run of the tool loop ended without the answer it was for (see its subclasses).

    Most are found in ``RunResult.error`` rather than raised: a run returns its result, whole, whatever
    happened to it.
    """


class ToolStatusError(RunError):
    """Raised by a run whose ``on_tool_status`` routes a tool status to ``"raise"``."""

    def __init__(self, message: str, *, status: Any = None, result: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.result = result


class RunDeadlineExceededError(RunError):
    """A run reached its ``deadline`` before it ended: found in ``RunResult.error``, never raised by the run.

    Whatever the run was doing then — waiting for budget, backing off between retries, a model call
    in flight (its HTTP request is cancelled), a tool step — was cancelled.  ``deadline`` is the
    run's budget in seconds (its own ``deadline=``, or the earlier one of the run it is a child of);
    ``step`` the step it was in.
    """

    def __init__(self, message: str, *, deadline: float | None = None, step: int | None = None) -> None:
        super().__init__(message)
        self.deadline = deadline
        self.step = step


class RedactedException(Exception):
    """Stands in, in a cause chain, for a foreign exception whose text held a credential.

    Never raised, only chained, so it is not in the :class:`AgentActorsError` tree; and it keeps
    ``Exception`` in its name because it can stand for any exception type, an error or not (as
    :class:`traceback.TracebackException` does).

    The original (h11's ``LocalProtocolError("Illegal header value b'Bearer <key>\\n'")``, say)
    is dropped with its ``args`` and its frames' locals; what helps debugging stays: the
    original's type (``original_type``, dotted), its message with credentials removed, and
    its traceback as redacted text in a note (shown by ``traceback`` and ``logger.exception``).
    """

    def __init__(self, original_type: str, message: str) -> None:
        self.original_type = original_type
        super().__init__(f"{original_type}: {message}" if message else original_type)

    def __reduce__(self) -> Any:
        # Exception's own pickling would call __init__ with the joined text alone (and fail: it takes two); the
        # message is that text less the type, and the note holding the traceback comes back with the __dict__.
        text = str(self.args[0]) if self.args else self.original_type
        message = "" if text == self.original_type else text.removeprefix(f"{self.original_type}: ")
        return (type(self), (self.original_type, message), dict(self.__dict__))


class Signal(Exception):
    """Base class of the signals: control flow that user code raises to steer a run, not a failure.

    A tool or an output validator raises one; the run catches it where it called that code and turns it into
    what the model reads.  Outside :class:`AgentActorsError`, so a ``try``/``except AgentActorsError`` in
    user code does not swallow it on its way to the run.
    """


class ModelRetry(Signal):
    """Raised by an output validator (or a tool) to send the model back with ``message``.

    From ``Agent(output_validator=...)``: the answer is refused and the model is asked again with
    ``message`` (counted against ``output_retries``).  From a tool: the call's result is the message
    (status ``error``), which the model reads before it calls again.  The message is for the model:
    say what is wrong and how to fix it.
    """

    def __init__(self, message: str) -> None:
        self.message = redact(str(message))
        super().__init__(self.message)


class OutputValidationError(RunError):
    """A run's answer never validated against its output type: ``output_retries`` re-asks ran out, or
    ``max_steps`` came first (the result is then ``bounded`` too).

    In ``RunResult.error`` (the run ends with ``output=None``; nothing is raised).  ``issues`` are the
    last attempt's problems as the model read them; ``attempts`` counts every answer refused.  No
    answer value is ever part of the message: only where it was wrong and what was expected.
    """

    def __init__(self, message: str, *, issues: Sequence[str] = (), attempts: int = 0) -> None:
        super().__init__(str(message))
        self.issues = tuple(redact(str(i)) for i in issues)
        self.attempts = attempts


class ToolDenied(Signal):
    """Raised by a tool to refuse the call itself: the result has status ``denied`` and ``reason``.

    For refusals only the tool can judge (a delegation past its ``max_depth``, an action the caller's
    ``deps`` do not allow); a rule that depends on the call alone belongs in a ``tool_policy``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(redact(str(reason)))
        self.reason = redact(str(reason))


class DelegationLimitError(ToolDenied):
    """A delegation (:meth:`Agent.as_tool <agentactors.Agent.as_tool>`) refused before its child started.

    Raised inside the delegating tool, so the call's status is ``denied`` and the calling model reads
    ``reason`` — and goes on, answering from what it has: the run is not failed by it.  A ``ToolDenied``,
    so code that catches the depth refusal as one keeps working.

    :ivar agent: the agent the call would have run.
    :ivar limit: which bound refused it — ``"runs"``: the delegation tree of the root run had started
        ``max_runs`` runs already; ``"depth"``: the child would have nested deeper than ``max_depth``.
    :ivar max_runs: the tool's ``max_runs`` (``limit == "runs"``), else ``None``.
    :ivar started: the runs the tree had started when this one was refused (``limit == "runs"``), else ``None``.
    :ivar max_depth: the tool's ``max_depth`` (``limit == "depth"``), else ``None``.
    :ivar depth: how deep the refused child would have been (``limit == "depth"``), else ``None``.
    """

    def __init__(
        self,
        agent: str,
        limit: str,
        reason: str,
        *,
        max_runs: int | None = None,
        started: int | None = None,
        max_depth: int | None = None,
        depth: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.agent = agent
        self.limit = limit
        self.max_runs = max_runs
        self.started = started
        self.max_depth = max_depth
        self.depth = depth

    def __reduce__(self) -> Any:
        # ToolDenied's own pickling would call this __init__ with the reason alone; the keywords come back
        # with the instance's __dict__.
        return (type(self), (self.agent, self.limit, self.reason), dict(self.__dict__))


class DelegationError(RunError):
    """A delegated run (:meth:`Agent.as_tool <agentactors.Agent.as_tool>`) ended without an answer.

    Raised inside the delegating tool, so the parent's model reads it as the call's ``error`` result
    (``agent`` and a concise ``reason``); the child's whole result is in the parent's
    ``RunResult.children``.
    """

    def __init__(self, agent: str, reason: str) -> None:
        super().__init__(f"agent {agent!r} did not answer: {reason}")
        self.agent = agent
        self.reason = redact(str(reason))

    def __reduce__(self) -> Any:
        return (type(self), (self.agent, self.reason), dict(self.__dict__))


class CostLimitExceededError(RunError):
    """A run spent more than its ``cost_limit``: found in ``RunResult.error``, never raised by the run.

    The run stops right after the model call that passed the limit (that call is paid for: its answer is
    not acted on), or before a call its estimate says would pass it (``estimate`` is then that call's
    estimated cost; ``None`` otherwise).  ``limit`` is the limit passed; ``spent`` what had been spent
    under it then, delegated runs' included, in the price table's currency (:mod:`agentactors.pricing`);
    ``scope`` whose limit it was: ``"run"`` (the run's ``cost_limit``), ``"parent run"``, ``"runtime"``,
    or a :class:`~agentactors.gateway.cost_budget.CostBudget`'s name (a session's is ``session 'key'``).
    """

    def __init__(
        self,
        message: str,
        *,
        limit: float | None = None,
        spent: float | None = None,
        scope: str | None = None,
        estimate: float | None = None,
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.spent = spent
        self.scope = scope
        self.estimate = estimate


class RunInterruptedError(RunError):
    """A run ended by ``run.interrupt(reason)``: found in ``RunResult.error``, never raised by the run.

    The run ended at a step boundary: the tools that were running finished and their results are in
    ``RunResult.messages``; no model call was made after the interrupt.  ``reason`` is the one given, credentials
    removed (as in the message): it is shown, logged and pickled to another process as the message is.
    """

    def __init__(self, message: str, *, reason: str | None = None, step: int | None = None) -> None:
        super().__init__(message)
        self.reason = None if reason is None else redact(str(reason))
        self.step = step


class RunNotFoundError(RunError):
    """``rt.run_ref(run_id)``: no run with that id is live in this runtime (it finished, or never ran here)."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunFinishedError(RunError):
    """A control message (``steer``, ``interrupt``, ``approve``, ``deny``) sent to a run that has finished."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class CallNotPendingError(RunError, ValueError):
    """``run.approve(call_id)`` / ``run.deny(call_id, reason)`` for a call that is not awaiting approval.

    Nothing changed: the run's pending calls are as they were (``run.state().pending``).
    """

    def __init__(self, message: str, *, call_id: str | None = None) -> None:
        super().__init__(message)
        self.call_id = call_id


class PauseConsumedError(RunError):
    """``agent.resume(paused, ...)`` of a pause that was resumed already in this process (a double-click on
    "Approve", two requests at once): the first resume runs the approved calls, this one runs nothing.

    :ivar run_id: the id of the run that paused.
    """

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class SessionError(AgentActorsError):
    """A session could not take a turn as asked (see its subclasses)."""


class SessionConflictError(SessionError):
    """The session changed under this turn: another turn committed first (another runtime or process on the
    same store), or the pause being resolved was already taken by another ``resolve``.

    Nothing of the refused turn was committed; the session reloads from its store before its next turn.
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(str(message))
        self.key = key


class SessionPausedError(SessionError):
    """A turn was sent to a session whose last turn is paused for approval: ``resolve()`` it first.

    ``pending`` are the calls awaiting a decision.
    """

    def __init__(self, message: str, *, key: str | None = None, pending: Sequence[Any] = ()) -> None:
        super().__init__(str(message))
        self.key = key
        self.pending = tuple(pending)


class SessionFormatError(SessionError, ValueError):
    """A stored session this version cannot read: written in a newer (or unknown) format, or not a session.

    Raised when a store loads it (or opens a database whose layout is newer); nothing is changed in the
    store.  Older formats are migrated when read (``docs/sessions.md``, "Formats"), never refused.
    ``found`` is the format the record or database declares (``None`` when it declares none).
    """

    def __init__(self, message: str, *, key: str | None = None, found: Any = None) -> None:
        super().__init__(str(message))
        self.key = key
        self.found = found


# --- the old names of renamed errors: the same classes, so ``except Overloaded`` still catches them --------

ActorStopped = ActorStoppedError
AskTimeout = AskTimeoutError
CostLimitExceeded = CostLimitExceededError
Overloaded = OverloadedError
ProviderTimeout = ProviderTimeoutError
RunDeadlineExceeded = RunDeadlineExceededError


# --- names served from other modules ---------------------------------------------------------------
#
# ``scrub_chain`` (defined in agentactors._scrub, which imports this module: an import here would close a
# cycle) and the classifier's old names are answered by a module ``__getattr__`` that agentactors._deprecate
# installs here, from its one table of moved names.  This module imports nothing above the redaction layer.

if TYPE_CHECKING:

    def scrub_chain(exc: BaseException) -> BaseException:
        """:func:`agentactors._scrub.scrub_chain`, as type checkers see it here."""
        ...
