"""One PostgreSQL connection used from worker threads: what the session store and the step journal share.

**Why psycopg 3, and why its sync connection in threads.**  psycopg 3 is the maintained PostgreSQL driver
(libpq underneath, binary wheels: the ``[postgres]`` extra installs ``psycopg[binary]``).  Its
``AsyncConnection`` runs on asyncio only — this library runs on trio too — so, as
:class:`~agentactors.sessions.SqliteStore` does with ``sqlite3``, each call runs the *sync* connection in a
worker thread, which works on both backends and costs one thread hop a call (tens of microseconds beside a
network round trip).  Each owner object has one connection, used by one call at a time
(:mod:`agentactors._db_worker`, as the SQLite ones).  No pool (``psycopg-pool``): one connection per process
and object is what a commit needs, and a group commit (the journal's) takes care of concurrent runs.

**Secrets.**  A DSN may carry a password (and ``sslpassword``, the client key's; ``PGPASSWORD`` may hold one
too).  None is ever shown: :func:`safe_dsn` is what ``repr`` and error messages print (the passwords replaced by
``***``), each is registered for redaction (:func:`~agentactors.redaction.register_secret`) when an owner is made,
and a connection that cannot be opened is raised again as the owner's connection error (:class:`Unreachable`:
:class:`~agentactors.journal.postgres.PostgresJournalConnectionError`, a ``JournalError``;
:class:`~agentactors.sessions.postgres.PostgresStoreConnectionError`, a ``SessionError`` — both also a
:class:`ConnectionError`, so ``except JournalError`` around a journaled run catches a server that is restarting, and
``except ConnectionError`` catches it still) with the passwords scrubbed from its text and neither a cause nor a
context: psycopg's error holds the failed connection, whose ``repr`` lists every option the password included.
A DSN libpq cannot parse has its message cut at its first quote: libpq quotes where it stopped (``invalid
percent-encoded token: "<password>%zz"``), no scrub can find a password in a DSN it cannot parse, and the quoted
text may itself hold quotes and line breaks.

A connection the server dropped (a restart, a failover) is thrown away when a call fails on it; the next call
opens a new one.

**Every call ends.**  Session and journal commits are shielded from cancellation (a cancelled run must not leave
half a write), so a database call that never returns would be a hang nobody can cancel.  Each connection is made
so that none can last for ever (:class:`Timeouts`: settings made once, when it opens — no statement is added,
and a round trip pays only the watchdog's arming, a dict write under a lock):

* the server ends a statement of ours that runs past ``statement_timeout`` (psycopg's ``QueryCanceled``) or waits
  for a lock — a row another transaction holds — past ``lock_timeout`` (``LockNotAvailable``), and a transaction
  of ours left idle (its process stopped mid-transaction) past ``statement_timeout``, so it cannot hold its rows
  locked against the others for ever;
* TCP keepalives (``keepalives_idle`` 10 s, ``keepalives_interval`` 5 s, ``keepalives_count`` 3) and
  ``tcp_user_timeout`` (30 s) end a connection whose server vanished without closing it (a network partition:
  the socket never errors) — unless the DSN sets them: the DSN's libpq parameters win;
* and what no server-side setting can end — a server that takes the statement and never answers (stopped,
  frozen, or cut off after it acknowledged the bytes) — a deadline of our own: a round trip that gets no answer
  within ``statement_timeout`` plus a grace (:func:`answer_bound`) has its socket shut down by a watchdog thread
  (one per process) and fails with psycopg's ``OperationalError`` ("did not answer"; its owner's typed error once
  it leaves the call: below); the connection is thrown away, as one the server dropped.  Its statement's outcome
  is then unknown, as any on a dropped connection.

``connect_timeout`` bounds opening a connection.  ``statement_timeout=None`` (and ``lock_timeout=None``) leaves
the server's setting (its role's, its DSN's ``options``) as it is — and then no deadline of ours either.

**Typed errors.**  What the database fails — a lock held past ``lock_timeout``, a statement cancelled, our own
deadline, a server gone mid-call, a full disk, a role refused a table — leaves a call as its owner's typed error
(:func:`typed`: :class:`~agentactors.journal.postgres.PostgresJournalError`, a ``JournalError``;
:class:`~agentactors.sessions.postgres.PostgresStoreError`, a ``SessionError``), as SQLite's owners do, so
``except JournalError`` around a journaled run catches it.  It names what failed, the DSN with its passwords
masked and the server's reason; ``sqlstate`` is kept and psycopg's error is its cause.  It is *also* an instance of
the psycopg class it replaces — its class is made once per pair (the owner's class, psycopg's), deriving from both
(:func:`typed_class`; psycopg's errors are plain Python classes, so the layouts allow it) — so
``except psycopg.errors.LockNotAvailable`` and ``except psycopg.OperationalError`` catch it still.  A bug of ours
(psycopg's ``ProgrammingError`` other than a refused privilege, ``NotSupportedError``, ``InterfaceError``) and the
library's own errors are left as they are.
"""

from __future__ import annotations

import math
import os
import re
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import cache, partial
from types import ModuleType
from typing import Any, Final, Protocol

import attrs

from ._db_worker import Worker as DbWorker
from ._dialect import Dialect
from ._extras import import_extra
from .redaction import register_secret

__all__ = [
    "DIALECT",
    "KEEPALIVES",
    "NOW",
    "Timeouts",
    "Unreachable",
    "Worker",
    "answer_bound",
    "import_psycopg",
    "reduce_typed",
    "register_passwords",
    "remade",
    "safe_dsn",
    "typed",
    "typed_class",
]

#: The server's clock, in seconds since the epoch (what ``:now`` stands for: hosts' clocks may disagree).
NOW: Final = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"


def import_psycopg(what: str) -> ModuleType:
    """``psycopg``, or an ImportError that says which extra installs it."""
    return import_extra("psycopg", "postgres", what)


#: The connection options that hold a secret: the server's password, and the one that unlocks the client's key.
_SECRET_OPTIONS: Final = ("password", "sslpassword")


def _passwords(dsn: str) -> list[str]:
    """The secrets a connection to ``dsn`` may use: its passwords, and ``PGPASSWORD`` (libpq reads it when the DSN
    names none; the failed connection a psycopg error holds lists it with the rest)."""
    found = [os.environ.get("PGPASSWORD", "")]
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(dsn)
    except Exception:  # not parseable, or psycopg missing: nothing we can name, and nothing we show
        params = {}
    found += [str(params[name]) for name in _SECRET_OPTIONS if params.get(name) is not None]
    return [secret for secret in found if secret]


def register_passwords(dsn: str) -> None:
    """Register the passwords of ``dsn`` (and ``PGPASSWORD``) for redaction: a log line or an error text of another
    library's that quotes one is then masked too (those of 8 characters or more: see ``register_secret``)."""
    for secret in _passwords(dsn):
        register_secret(secret)


def safe_dsn(dsn: str) -> str:
    """``dsn`` with its passwords (URL or ``key=value`` form; ``sslpassword`` too) replaced by ``***``;
    ``"<dsn>"`` if unparseable."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(dsn)
    except Exception:
        return "<dsn>"
    for name in _SECRET_OPTIONS:
        if name in params:
            params[name] = "***"
    shown = make_conninfo("", **params)
    return shown


def scrub(text: str, dsn: str) -> str:
    """``text`` without the passwords of ``dsn`` (nor ``PGPASSWORD``), longest first."""
    for secret in sorted(_passwords(dsn), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


#: Where a part of the DSN libpq's message quotes may begin (``invalid percent-encoded token: "..."``): its own
#: ``"`` — and the marks a translated libpq (one built with NLS) may quote with instead.
_QUOTES: Final = frozenset('"\'\u00ab\u00bb\u2039\u203a\u201a\u201e\u201c\u201d\u2018\u2019\u300c\u300d\u300e\u300f')
#: The beginnings of libpq's messages that quote its syntax, not a part of the DSN (``missing "=" after "..."``):
#: kept whole, and cut after them.
_LITERAL_HEADS: Final = (
    'missing "=" after ',
    'end of string reached when looking for matching "]" in IPv6 host address in URI: ',
)


#: libpq's TCP keepalives and ``tcp_user_timeout`` (ms) for a connection whose DSN does not set them: a server
#: gone without a word (a partition) is found out within about 25 seconds of silence, or 30 seconds of unacknowledged
#: data, instead of the hours of the OS's defaults.  Ignored on a unix socket (nothing in between to vanish).
KEEPALIVES: Final = {
    "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3, "tcp_user_timeout": 30000,
}


def _seconds(name: str, value: Any) -> float | None:
    """``None``, or ``value`` as seconds.  :raises ValueError: not a finite number > 0."""
    return None if value is None else _required(name, value, " or None")


#: The longest timeout PostgreSQL keeps: milliseconds in a C ``int`` (about 24.8 days).
_LONGEST: Final = (2**31 - 1) / 1000


def _required(name: str, value: Any, also: str = "") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= _LONGEST:
        raise ValueError(f"{name} must be a number of seconds > 0 and <= {_LONGEST:g}{also}, not {value!r}")
    return float(value)


@attrs.frozen
class Timeouts:
    """How long a connection's calls may take (see the module docstring), checked.

    :param connect: seconds opening a connection may take (libpq's ``connect_timeout``; it counts whole seconds,
        at least two).
    :param statement: seconds one statement of ours may run on the server before it cancels it, and a
        transaction of ours may sit idle; also what our own deadline on an answer is made of (:func:`answer_bound`).
        ``None``: the server's setting, and no deadline of ours.
    :param lock: seconds a statement of ours may wait for a lock another transaction holds.  ``None``: the
        server's setting.
    :raises ValueError: a timeout that is not a finite number of seconds > 0 (or ``None`` where allowed).
    """

    connect: float = 10.0
    statement: float | None = 30.0
    lock: float | None = 10.0

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "connect", _required("connect_timeout", self.connect))
        object.__setattr__(self, "statement", _seconds("statement_timeout", self.statement))
        object.__setattr__(self, "lock", _seconds("lock_timeout", self.lock))


def answer_bound(statement_timeout: float | None) -> float | None:
    """How long a round trip may wait for the server's answer before our watchdog ends it: the server's own
    ``statement_timeout`` plus a grace (a quarter of it, at least a second), so a server that is there always
    answers first — with its ``QueryCanceled`` — and only one that is not is cut off."""
    return None if statement_timeout is None else statement_timeout + max(1.0, statement_timeout / 4)


class Unreachable(Protocol):
    """How an owner's connection error is made (a connection that could not be opened: refused, unreachable, a
    password refused, a DSN libpq cannot parse): the message — the DSN's passwords scrubbed — and the DSN as shown
    (passwords masked, :func:`safe_dsn`).  Raised with neither cause nor context (see **Secrets**)."""

    def __call__(self, message: str, *, dsn: str) -> Exception: ...


class Worker(DbWorker[Any]):
    """One connection to ``dsn``, used one call at a time from worker threads (see the module docstring).

    :param setup: run in the worker thread on each new connection (its tables), in autocommit mode.
    :param what: the owner's name, for the error when psycopg is missing.
    :param name: names the per-loop limiter (one per owner object).
    :param connect_timeout, statement_timeout, lock_timeout: :class:`Timeouts`.
    :param typed: what psycopg's errors become when they leave a call (:func:`typed`); ``None``: as they are.
    :param unreachable: the owner's error for a connection that could not be opened (:class:`Unreachable`, a
        ``ConnectionError`` too); ``None``: a plain :class:`ConnectionError`.
    :raises ValueError: a timeout that is not a finite number of seconds > 0 (``None`` where allowed).
    """

    __slots__ = ("dsn", "timeouts", "what")

    def __init__(
        self,
        dsn: str,
        setup: Callable[[Any], None],
        *,
        what: str,
        name: str,
        connect_timeout: float = 10.0,
        statement_timeout: float | None = 30.0,
        lock_timeout: float | None = 10.0,
        typed: Callable[[Exception], Exception | None] | None = None,
        unreachable: Unreachable | None = None,
    ) -> None:
        timeouts = Timeouts(connect_timeout, statement_timeout, lock_timeout)
        register_passwords(dsn)
        super().__init__(partial(_connect, dsn, what, timeouts, unreachable), setup, name, dead=_dead, typed=typed)
        self.dsn = dsn
        self.what = what
        self.timeouts = timeouts

    @property
    def connect_timeout(self) -> float:
        return self.timeouts.connect


# --- typed errors (see the module docstring) ----------------------------------------------------------------------

#: The typed classes made so far: ``(owner's class, psycopg's class)`` -> the class deriving from both, and back.
_MADE: Final[dict[tuple[type[Exception], type[Exception]], type[Exception]]] = {}
_PAIRS: Final[dict[type[BaseException], tuple[type[Exception], type[Exception]]]] = {}
_MADE_LOCK: Final = threading.Lock()


def typed_class(base: type[Exception], driver: type[Exception]) -> type[Exception]:
    """The class of ``base``'s errors that replace psycopg's ``driver``: deriving from both, made once a pair.

    Named as ``base`` (what a traceback, a log line or a served 500 shows is the class to catch); ``isinstance``
    with either holds.  Made on the failure path, in a worker thread: under a lock, so a pair has one class.
    """
    with _MADE_LOCK:
        made = _MADE.get((base, driver))
        if made is None:
            namespace: dict[str, Any] = {
                "__module__": base.__module__, "__qualname__": base.__qualname__, "__doc__": base.__doc__,
                # What psycopg's error tells of the server's answer is read from the one it replaces (its cause):
                # code that read ``e.diag.message_detail`` of psycopg's error reads the same of this one.
                **{name: _forwarded(name, own) for name in _FORWARDED
                   if isinstance(own := getattr(driver, name, None), property)},
            }
            made = _MADE[base, driver] = type(base.__name__, (base, driver), namespace)
            _PAIRS[made] = (base, driver)
        return made


#: psycopg's error properties a typed error answers from psycopg's own error (its ``__cause__``).
_FORWARDED: Final = ("diag", "pgconn", "pgresult")


def _forwarded(name: str, own: property) -> property:
    """``name`` read from the psycopg error this one replaces (its ``__cause__``: :func:`typed` sets it), else as
    psycopg's ``own`` property reads it of this error (one unpickled, made without a cause)."""

    def read(self: BaseException) -> Any:
        cause = self.__cause__
        if cause is not None and type(cause) in _PAIRS.get(type(self), ()):
            return getattr(cause, name)
        return own.fget(self) if own.fget is not None else None

    return property(read, doc=f"psycopg's ``{name}`` of the error this one replaces (its ``__cause__``).")


def remade(base: type[Exception], driver: type[Exception] | None, args: tuple[Any, ...]) -> Exception:
    """A typed error again, from what :func:`reduce_typed` pickled (its state is restored after)."""
    cls = base if driver is None else typed_class(base, driver)
    return cls(*args)


def reduce_typed(error: BaseException) -> tuple[Any, ...] | None:
    """How an error of a class :func:`typed_class` made pickles (Ray ships errors): by its pair, since the class
    itself is not found by its name (its name is its base's); ``None`` for any other class (pickled as usual)."""
    pair = _PAIRS.get(type(error))
    if pair is None:
        return None
    return remade, (*pair, error.args), dict(vars(error))


def _meaning(exc: Any, text: str, timeouts: Timeouts | None, operational: bool) -> str | None:
    """What psycopg's failure means for the call, or ``None``: by its SQLSTATE; without one, an ``operational``
    error (psycopg's ``OperationalError`` itself) is libpq's — the connection failed — unless the reason says so."""
    state = getattr(exc, "sqlstate", None) or ""
    lock = None if timeouts is None else timeouts.lock
    statement = None if timeouts is None else timeouts.statement
    if state == "55P03":
        waited = "its lock_timeout" if lock is None else f"lock_timeout={lock:g} s"
        return (
            f"another transaction held what it needed locked past {waited}: nothing of it was written; try again "
            "once it is free, or give it a longer lock_timeout"
        )
    if state == "57014":
        ran = "its statement_timeout" if statement is None else f"statement_timeout={statement:g} s"
        return f"the server cancelled it — past {ran}, or an operator's cancel: nothing of it was written"
    lost = state.startswith(("08", "57P")) or (not state and operational)
    if lost and "outcome is unknown" not in text:
        return "the connection is lost: whether it took effect is unknown; the next call opens a new connection"
    return None


def typed(
    error: type[Exception], what: str, dsn: str, timeouts: Timeouts | None = None
) -> Callable[[Exception], Exception | None]:
    """What an owner's worker raises in place of psycopg's error (and a journal's batch answers for a commit):
    an ``error`` of the class :func:`typed_class` makes for it — also psycopg's class — its text naming ``what``
    (``"journal"``, ``"session store"``), the DSN with its passwords masked, the server's reason (passwords scrubbed
    too) and what it means; ``dsn`` (masked) and ``sqlstate`` kept, psycopg's error its cause.

    ``None`` (raised as it is) for anything else: the library's own errors (the owner's connection error, a
    ``ConnectionError``, included: :class:`Unreachable`), and
    psycopg's that say the library misused it — ``InterfaceError``, ``NotSupportedError``, a ``ProgrammingError``
    (a syntax error, a missing table: a bug) other than ``InsufficientPrivilege`` (a role refused a table: the
    database's configuration, as a read-only SQLite file is).
    """

    def make(exc: Exception) -> Exception | None:
        psycopg = sys.modules.get("psycopg")  # not imported: the error is not its (and a missing extra stays so)
        if psycopg is None or not isinstance(exc, psycopg.DatabaseError) or isinstance(exc, error):
            return None
        errors = psycopg.errors
        if isinstance(exc, psycopg.NotSupportedError) or (
            isinstance(exc, psycopg.ProgrammingError) and not isinstance(exc, errors.InsufficientPrivilege)
        ):
            return None
        reason = " ".join(scrub(str(exc), dsn).split())  # the server's CONTEXT lines, libpq's tabs: one line
        meaning = _meaning(exc, reason, timeouts, isinstance(exc, psycopg.OperationalError))
        shown = safe_dsn(dsn)  # here, on the failure path: an owner made per request pays nothing for it
        text = f"the PostgreSQL {what} {shown!r} failed: {reason}" + ("" if meaning is None else f" ({meaning})")
        cls: Callable[..., Exception] = typed_class(error, type(exc))  # error's __init__: (text, *, dsn, sqlstate)
        made = cls(text, dsn=shown, sqlstate=getattr(exc, "sqlstate", None))
        made.__cause__ = exc  # also where it is returned as a value (a journal's batch of commits), not raised
        return made

    return make


def _connect(dsn: str, what: str, timeouts: Timeouts, unreachable: Unreachable | None = None) -> Any:
    """An autocommit connection with the keepalives and timeouts set (see the module docstring); a failure as the
    owner's connection error (``unreachable``; a plain :class:`ConnectionError` without one) with the passwords
    scrubbed, neither cause nor context (see **Secrets**)."""
    psycopg = import_psycopg(what)
    failure: str | None = None
    try:
        from psycopg.conninfo import conninfo_to_dict

        given = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        # libpq quotes the part it could not parse, a password's maybe: nothing from its first quote on is shown.
        shown = _unparseable(scrub(str(exc), dsn).strip())
        failure = f"{what} could not connect: its DSN cannot be parsed ({shown})"
    else:
        keepalives = {key: value for key, value in KEEPALIVES.items() if key not in given}
        if psycopg.pq.version() < 120000:  # a libpq older than 12 has no tcp_user_timeout (and refuses it)
            keepalives.pop("tcp_user_timeout", None)
        try:
            conn = _connection_class().connect(
                dsn, autocommit=True, connect_timeout=max(1, math.ceil(timeouts.connect)), **keepalives
            )
        except psycopg.Error as exc:
            failure = f"{what} could not connect to {safe_dsn(dsn)}: {scrub(str(exc), dsn).strip()}"
    if failure is not None:
        # Raised here, outside the except blocks: psycopg's error — its failed connection lists every option, the
        # password too — is neither the cause nor the context of ours.
        error = ConnectionError(failure) if unreachable is None else unreachable(failure, dsn=safe_dsn(dsn))
        raise error from None
    try:
        conn.answer_timeout = answer_bound(timeouts.statement)
        settings = {"statement_timeout": timeouts.statement, "lock_timeout": timeouts.lock}
        if conn.info.server_version >= 90600:  # a server older than 9.6 has no such setting
            settings["idle_in_transaction_session_timeout"] = timeouts.statement
        chosen = {name: f"{math.ceil(seconds * 1000)}ms" for name, seconds in settings.items() if seconds is not None}
        if chosen:  # one round trip, at connection time
            calls = ", ".join(f"set_config('{name}', %({name})s, false)" for name in chosen)
            conn.execute(f"SELECT {calls}", chosen)
    except BaseException:
        conn.close()
        raise
    return conn


def _unparseable(message: str) -> str:
    """libpq's ``message`` about a DSN it cannot parse, cut at the first part it quotes (``"…"`` instead).

    Cut, not the quoted parts replaced: what libpq quotes is the DSN's own text, which may hold a quote or a line
    break itself (``invalid percent-encoded token: "pa"ss<password>%"``) — no pattern can tell where it ends, and
    a message quotes the DSN only after the words that say what is wrong.
    """
    head = next((head for head in _LITERAL_HEADS if message.startswith(head)), "")
    rest = message[len(head):]
    cut = next((at for at, char in enumerate(rest) if char in _QUOTES), None)
    return message if cut is None else f'{head}{rest[:cut]}"…"'


def _dead(conn: Any) -> bool:
    """The server went away (a restart, a failover), or did not answer in time: the next call opens a new
    connection.

    Asked before each call too (:class:`agentactors._db_worker.Worker`), where psycopg's ``closed`` and ``broken``
    know only what an earlier call met: a connection the server dropped while it sat idle (a restart, a failover,
    ``pg_terminate_backend``, an idle-session killer) looks alive until a statement fails on it — the commit of a
    turn whose model and tools already ran.  So an idle connection's socket is looked at too (:func:`_hung_up`).
    """
    return bool(conn.closed or conn.broken or getattr(conn, "expired", False) or _hung_up(conn))


def _hung_up(conn: Any) -> bool:
    """Something waits on the socket of a connection between calls: the server spoke unasked.

    A backend answers only what it is asked, and every call reads its answers to the end; what it sends unasked to
    these connections (which never ``LISTEN``) is its goodbye — a ``FATAL`` message, then the end of the stream — so
    a readable socket means the connection is gone, and it is thrown away before a statement fails on it.  One
    ``poll`` with no wait: no round trip.  (A connection dropped silently — a host gone, a network cut — still fails
    its next call: only an answer could tell, and that is the bounded wait of ``docs/durability.md``.)
    """
    try:
        fd = conn.fileno()
    except Exception:  # psycopg's OperationalError: no socket, so no connection
        return True
    if _poll is not None:
        poller = _poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # Windows: no poll(); select() takes a socket of any number


#: ``select.poll`` where there is one: ``select()`` refuses a descriptor past ``FD_SETSIZE`` (1024) on POSIX.
_poll: Final = getattr(select, "poll", None)


@cache
def _connection_class() -> Any:
    """psycopg's ``Connection`` whose every round trip is watched (:class:`_Watchdog`): defined on first use, as
    psycopg is imported only then."""
    from psycopg import Connection, OperationalError

    class WatchedConnection(Connection[Any]):
        #: Seconds a round trip may wait for its answer (:func:`answer_bound`); ``None``: for ever.
        answer_timeout: float | None = None
        #: The watchdog shut this connection's socket: it is thrown away (:func:`_dead`).
        expired: bool = False

        def wait(self, gen: Any, *args: Any, **kwargs: Any) -> Any:
            """Every statement, commit and rollback waits here for the server: armed meanwhile."""
            bound = self.answer_timeout
            if bound is None:
                return super().wait(gen, *args, **kwargs)
            _WATCHDOG.arm(self, bound)
            try:
                return super().wait(gen, *args, **kwargs)
            except OperationalError:
                if self.expired:
                    raise OperationalError(
                        f"the server did not answer within {bound:g} s (its statement_timeout and a grace): "
                        "the connection was closed, and the statement's outcome is unknown"
                    ) from None
                raise
            finally:
                _WATCHDOG.disarm(self)

    return WatchedConnection


class _Watchdog:
    """The process's one thread that cuts off round trips past their deadline (started when first needed, gone
    after a minute with nothing armed).

    Arming is a dict write under a lock (no wake-up of the thread: it looks every quarter of the shortest bound
    it has seen, at most every five seconds, while anything is armed); cutting off is ``shutdown`` of the
    connection's socket, which wakes the waiting round trip with an end of file.  Under the same lock as
    disarming: a round trip that got its answer is never cut off.
    """

    __slots__ = ("_armed", "_cond", "_running", "_tick")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._armed: dict[int, tuple[float, Any]] = {}
        self._running = False
        self._tick = 5.0

    def arm(self, conn: Any, seconds: float) -> None:
        with self._cond:
            self._armed[id(conn)] = (time.monotonic() + seconds, conn)
            tick = max(0.05, min(5.0, seconds / 4))
            if not self._running:
                self._running = True
                self._tick = tick
                threading.Thread(target=self._run, name="agentactors-pg-watchdog", daemon=True).start()
            elif tick < self._tick:
                self._tick = tick
                self._cond.notify()

    def disarm(self, conn: Any) -> None:
        with self._cond:
            self._armed.pop(id(conn), None)

    def _run(self) -> None:
        idle_since = time.monotonic()
        with self._cond:
            while True:
                self._cond.wait(self._tick)
                now = time.monotonic()
                if not self._armed:
                    if now - idle_since > 60:
                        self._running = False
                        return
                    continue
                idle_since = now
                for key, (due, conn) in list(self._armed.items()):
                    if due <= now:
                        del self._armed[key]
                        conn.expired = True
                        _shut(conn)


def _shut(conn: Any) -> None:
    """Shut ``conn``'s socket down (not close it: its descriptor is libpq's), waking whoever waits on it."""
    try:
        fd = conn.pgconn.socket
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # closed meanwhile: nothing left to cut off
        pass


_WATCHDOG: Final = _Watchdog()


@cache
def _sql(text: str) -> str:
    """A shared statement in psycopg's terms: ``%(name)s`` parameters, ``:now`` the server's clock."""
    return re.sub(r"(?<![:\w]):(\w+)", lambda m: NOW if m[1] == "now" else f"%({m[1]})s", text)


def _transaction(conn: Any) -> AbstractContextManager[Any]:
    return conn.transaction()  # type: ignore[no-any-return]


def _autocommit(conn: Any) -> AbstractContextManager[None]:
    """One statement is atomic by itself: no transaction around it (one round trip)."""
    return nullcontext()


@contextmanager
def _snapshot(conn: Any) -> Iterator[None]:
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


#: PostgreSQL's side of the shared statements (:mod:`agentactors._dialect`): the server's clock, rows locked
#: ``FOR UPDATE``, a single statement in autocommit, reads of one snapshot in ``REPEATABLE READ``.
DIALECT: Final = Dialect(
    sql=_sql, row_lock=" FOR UPDATE", transaction=_transaction, single=_autocommit, snapshot=_snapshot
)
