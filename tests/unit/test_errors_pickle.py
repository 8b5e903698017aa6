"""Every exception class the package defines comes back from a pickle as it went: its type, its text, its
attributes and its notes.

Ray ships a worker's exception to its driver by pickling it, and so does multiprocessing (and anything built on
``concurrent.futures.ProcessPoolExecutor``); an error whose ``__init__`` does not take what ``Exception``'s own
pickling passes it (its ``args``, positionally) pickles, but fails when it is unpickled — on the other side,
where ``TypeError: __init__() missing 1 required positional argument`` replaces the error that was raised.

The classes are found as ``test_errors_tree`` finds them (every module of the package imported, a module skipped
only when an optional extra it needs is not installed), so a class added later is swept too: each needs an entry
in :data:`BUILDS` (how to make one with representative arguments) or in :data:`STAYS_HOME` (why it never leaves
its package), and the sweep fails for one in neither.  psycopg's classes that the Postgres errors are also made
as, and the Ray errors, are swept when their extra is installed.
"""

from __future__ import annotations

import importlib.util
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentactors.errors import ErrorKind, ProviderError, RunInterruptedError

from .test_errors_tree import import_every_module, package_exceptions

Build = Callable[[type[Any]], BaseException]

_PROVIDER = {"provider": "openai", "model": "gpt-x"}


def _provider_error(cls: type[Any]) -> BaseException:
    error: BaseException = cls(
        "rate limited", kind=ErrorKind.transient, status=429, retry_after=2.0, request_id="req-1", **_PROVIDER
    )
    return error


#: How to make an error of each class (by name: ``test_errors_tree`` checks names are unique), with arguments such
#: as the library passes: every required one, and the optional ones that become attributes.
BUILDS: dict[str, Build] = {
    # agentactors.errors
    "AgentActorsError": lambda cls: cls("it failed"),
    "ProviderError": _provider_error,
    "MalformedResponseError": lambda cls: cls("no choices", status=200, **_PROVIDER),
    "ResponseTooLargeError": lambda cls: cls(
        "too large", limit="max_response_bytes", limit_bytes=1024, **_PROVIDER
    ),
    "UnsupportedToolChoiceError": lambda cls: cls(**_PROVIDER),
    "UnsupportedContentError": lambda cls: cls("no audio", part="audio/wav, 3 MB", **_PROVIDER),
    "UnsupportedSettingError": lambda cls: cls("no thinking", setting="thinking_budget", **_PROVIDER),
    "CircuitOpenError": lambda cls: cls(retry_after=5.0, last_error=ValueError("boom"), **_PROVIDER),
    "StreamInterruptedError": lambda cls: cls(
        "reset", partial_text="Hel", status=502, request_id="req-2", **_PROVIDER
    ),
    "ProviderTimeoutError": lambda cls: cls("took 30 s", **_PROVIDER),
    "OverloadedError": lambda cls: cls("queue full", retry_after=1.5, reason="max_waiting", **_PROVIDER),
    "AllProvidersFailedError": lambda cls: cls(
        "all failed",
        [ProviderError("down", provider="a", kind="transient"), ProviderError("no", provider="b", kind="account")],
        skipped=["c"],
    ),
    "ActorError": lambda cls: cls("no answer"),
    "AskTimeoutError": lambda cls: cls("ask timed out after 5 s"),
    "ActorStoppedError": lambda cls: cls("actor 'a' stopped"),
    "ActorDeadlockError": lambda cls: cls("would deadlock"),
    "WrongEventLoopError": lambda cls: cls("another loop"),
    "RunError": lambda cls: cls("the run failed"),
    "ToolStatusError": lambda cls: cls("tool failed", status="error", result="tool result"),
    "RunDeadlineExceededError": lambda cls: cls("past 10 s", deadline=10.0, step=3),
    "RedactedException": lambda cls: cls("h11.LocalProtocolError", "Illegal header value"),
    "Signal": lambda cls: cls("steer"),
    "ModelRetry": lambda cls: cls("answer in French"),
    "OutputValidationError": lambda cls: cls("not an int", issues=["$: expected int"], attempts=3),
    "ToolDenied": lambda cls: cls("not allowed"),
    "DelegationLimitError": lambda cls: cls("worker", "runs", "10 runs started", max_runs=10, started=10),
    "DelegationError": lambda cls: cls("worker", "it failed"),
    "CostLimitExceededError": lambda cls: cls("over $1", limit=1.0, spent=1.2, scope="run", estimate=0.3),
    "RunInterruptedError": lambda cls: cls("interrupted: stop", reason="stop", step=2),
    "RunNotFoundError": lambda cls: cls("no run r1", run_id="r1"),
    "RunFinishedError": lambda cls: cls("run r1 finished", run_id="r1"),
    "CallNotPendingError": lambda cls: cls("not pending", call_id="c1"),
    "PauseConsumedError": lambda cls: cls("resumed already", run_id="r1"),
    "SessionError": lambda cls: cls("session failed"),
    "SessionConflictError": lambda cls: cls("conflict", key="s1"),
    "SessionPausedError": lambda cls: cls("paused", key="s1", pending=["c1", "c2"]),
    "SessionFormatError": lambda cls: cls("format 9", key="s1", found=9),
    # agentactors.journal
    "JournalError": lambda cls: cls("journal failed"),
    "ReplayDivergedError": lambda cls: cls("diverged at step 2"),
    "RecoveryError": lambda cls: cls(["a result"], {"run-1": ValueError("bad row"), "run-2": KeyError("x")}),
    "RunNotRecordedError": lambda cls: cls("no run r1"),
    "StepOutOfRangeError": lambda cls: cls("no step 9", at_step=9, steps=2, first=3),
    "ForkAgentMissingError": lambda cls: cls("no agent 'worker'", agent="worker"),
    "JournalFormatError": lambda cls: cls("not JSON"),
    "LeaseLostError": lambda cls: cls("lease lost", run_id="r1"),
    "SqliteJournalError": lambda cls: cls("locked", path="/tmp/j.db", errorname="SQLITE_BUSY", errorcode=5),
    "SqliteJournalConnectionError": lambda cls: cls("cannot open", path="/nowhere/j.db"),
    "PostgresJournalError": lambda cls: cls("failed", dsn="host=db", sqlstate="55P03"),
    "PostgresJournalConnectionError": lambda cls: cls("could not connect", dsn="host=db"),
    # agentactors.sessions
    "SqliteStoreError": lambda cls: cls("locked", path="/tmp/s.db", errorname="SQLITE_BUSY", errorcode=5),
    "SqliteStoreConnectionError": lambda cls: cls("cannot open", path="/nowhere/s.db"),
    "PostgresStoreError": lambda cls: cls("failed", dsn="host=db", sqlstate="57014"),
    "PostgresStoreConnectionError": lambda cls: cls("could not connect", dsn="host=db"),
    # elsewhere in the package
    "ConversionError": lambda cls: cls("$.when", "a date (YYYY-MM-DD)"),
    "EventRecordError": lambda cls: cls("line 3 is not JSON", path="/tmp/run.jsonl", line=3),
    "ToolsetError": lambda cls: cls("the MCP server exited"),
    "ToolNameClashError": lambda cls: cls("two tools named 'search'"),
    "MCPToolError": lambda cls: cls("the tool failed"),
    "MCPConnectionError": lambda cls: cls("the server went away"),
    "GeminiSchemaError": lambda cls: cls("$.x: recursive schema"),
    "UnsupportedToolNameError": lambda cls: cls("bad name", tool="a.b", rule="^[a-z_]+$", **_PROVIDER),
    "ScriptExhaustedError": lambda cls: cls("no more script", provider="scripted", kind="request"),
    "BatchError": lambda cls: cls(
        "expired", provider="openai", reason="expired", model="gpt-x", batch_id="b1", custom_id="i1"
    ),
    "BatchUnsupportedError": lambda cls: cls("no batch API", provider="ollama"),
    "ProtocolError": lambda cls: cls("bad chunk"),
    "TimedOut": lambda cls: cls(2.5),
    "BodyError": lambda cls: cls("body too large", 413),
    "Disconnected": lambda cls: cls(),
    "InvalidInput": lambda cls: cls("bad input"),
    "LiveUnavailable": lambda cls: cls("no key"),
    "RecordNotWritten": lambda cls: cls("disk full"),
    "VendorGone": lambda cls: cls("vendor died"),
    # agentactors.ray (with the ray extra)
    "WorkerLostError": lambda cls: cls("worker died", worker="w1", attempts=2),
    "WorkerUnavailableError": lambda cls: cls("no answer", worker="w1", attempts=1),
    "RemoteError": lambda cls: cls("it failed", type_name="mylib.WeirdError"),
    "VersionMismatchError": lambda cls: cls("0.9 vs 1.0"),
    "LedgerUnavailableError": lambda cls: cls("ledger gone"),
}

#: Classes that never leave the module that raises them (the tree in ``agentactors.errors`` says so), so nothing
#: pickles them; they are not required to come back from one.  Each says why.
STAYS_HOME: dict[str, str] = {
    "BadRequest": "agentactors.serve._openai_input: answered with a 400, never leaves serve",
    "ResumeRefused": "agentactors.serve._agui_input: answered with RUN_ERROR, never leaves serve",
    "JsonBoundError": "agentactors._json: raised as the edge's own error, never leaves an edge",
    "WireRejection": "agentactors.testing: the fake vendor's 4xx, never leaves the fake vendor",
}

#: Classes whose pickle carries their type, text and attributes but not their notes (``add_note``): their
#: ``__reduce__`` rebuilds them from their fields alone (none now: the Ray errors carry their notes too).
NOTES_DROPPED: frozenset[str] = frozenset()


def _classes() -> dict[str, type[BaseException]]:
    modules, _ = import_every_module()
    return {cls.__name__: cls for cls in package_exceptions(modules)}


def _shown(value: Any) -> Any:
    """``value`` as it can be compared across a pickle: an exception by its type and text (exceptions do not
    compare equal), containers item by item."""
    if isinstance(value, BaseException):
        return (type(value), str(value))
    if isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return (type(value), tuple(_shown(item) for item in value))
    return value


RoundTrip = Callable[[BaseException], Any]


def _pickled(protocol: int) -> RoundTrip:
    return lambda error: pickle.loads(pickle.dumps(error, protocol=protocol))


def _picklers() -> Iterator[tuple[str, RoundTrip]]:
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        yield f"pickle protocol {protocol}", _pickled(protocol)
    if importlib.util.find_spec("ray") is not None:  # how Ray ships a worker's exception
        from ray import cloudpickle

        dumps: Callable[[object], bytes] = cloudpickle.dumps
        yield "ray's cloudpickle", lambda error: cloudpickle.loads(dumps(error))


def _fields(name: str, error: BaseException) -> dict[str, Any]:
    """The error's attributes; its notes apart for a class that does not carry them (checked on their own)."""
    fields = dict(vars(error))
    if name in NOTES_DROPPED:
        fields.pop("__notes__", None)
    return fields


def _round_trip_problems(name: str, error: BaseException) -> list[str]:
    error.add_note("see the runbook")
    problems: list[str] = []
    for how, round_trip in _picklers():
        try:
            back = round_trip(error)
        except Exception as exc:
            problems.append(f"{name} ({how}): {type(exc).__name__}: {exc}")
            continue
        if type(back) is not type(error):
            problems.append(f"{name} ({how}): came back a {type(back).__name__}")
            continue
        for what, before, after in (
            ("str", str(error), str(back)),
            ("args", _shown(error.args), _shown(back.args)),
            ("attributes", _shown(_fields(name, error)), _shown(_fields(name, back))),
        ):
            if before != after:
                problems.append(f"{name} ({how}): its {what} changed: {before!r} -> {after!r}")
        if name not in NOTES_DROPPED and getattr(back, "__notes__", None) != error.__notes__:
            problems.append(f"{name} ({how}): its notes were lost")
    return problems


def test_every_exception_class_has_an_entry() -> None:
    classes = _classes()
    assert len(classes) > 50  # the walk found the package
    missing = sorted(set(classes) - set(BUILDS) - set(STAYS_HOME))
    assert not missing, f"add a BUILDS entry (or a STAYS_HOME reason) for: {', '.join(missing)}"
    stale = sorted((set(BUILDS) | set(STAYS_HOME)) - set(classes))
    assert not stale, f"no such class in the package (renamed? removed? an extra not installed?): {stale}"


def test_every_exception_comes_back_from_a_pickle_as_it_went() -> None:
    problems: list[str] = []
    for name, cls in sorted(_classes().items()):
        if name in STAYS_HOME:
            continue
        error = BUILDS[name](cls)
        assert type(error) is cls, name
        problems += _round_trip_problems(name, error)
    assert not problems, "\n".join(problems)


def test_the_ray_errors_are_swept_when_ray_is_installed() -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the ray extra is not installed")
    classes = _classes()
    for name in ("WorkerLostError", "WorkerUnavailableError", "RemoteError", "VersionMismatchError"):
        assert name in classes and classes[name].__module__.startswith("agentactors.ray"), name


def test_the_postgres_errors_made_as_psycopg_classes_come_back_from_a_pickle() -> None:
    """A Postgres journal's or store's error is also made as the psycopg class it replaces (a class made at run
    time, named as its base): it pickles by that pair."""
    psycopg = pytest.importorskip("psycopg")
    from agentactors._postgres import typed
    from agentactors.journal.postgres import PostgresJournalError
    from agentactors.sessions.postgres import PostgresStoreError

    problems: list[str] = []
    for base in (PostgresJournalError, PostgresStoreError):
        make = typed(base, "journal", "postgresql://u:hunter2-secret@db.example/app")
        for driver in (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled, psycopg.OperationalError):
            error = make(driver("it failed"))
            assert isinstance(error, base) and isinstance(error, driver)
            problems += _round_trip_problems(f"{base.__name__} as {driver.__name__}", error)
    assert not problems, "\n".join(problems)


def test_a_run_interrupted_errors_reason_holds_no_credential() -> None:
    """The message was redacted, the ``reason`` kept as given: shown, logged, pickled to a Ray driver."""
    secret = "sk-err-SECRET-123"
    error = RunInterruptedError(f"interrupted: user pressed stop {secret}", reason=f"user pressed stop {secret}")
    assert secret not in str(error)
    assert error.reason is not None and secret not in error.reason and error.reason.startswith("user pressed stop")
    assert secret.encode() not in pickle.dumps(error)
    assert RunInterruptedError("interrupted", reason=None).reason is None
