"""One database connection used from worker threads, one call at a time: what every SQL store and journal shares.

:class:`~agentactors.sessions.SqliteStore`, :class:`~agentactors.sessions.PostgresStore`,
:class:`~agentactors.journal.SqliteJournal` and :class:`~agentactors.journal.PostgresJournal` all talk to their
database through a blocking driver (stdlib ``sqlite3``; psycopg 3's sync connection, whose ``AsyncConnection`` is
asyncio-only), and all reach it the same way:

* **in worker threads** (``anyio.to_thread.run_sync``): it works on asyncio and trio alike, for one thread hop a
  call (tens of microseconds beside a disk sync or a network round trip);
* **one connection per object, one call at a time**: a :class:`anyio.CapacityLimiter` of one token per event loop
  (its calls queue for *its* thread instead of taking slots of anyio's default pool, which the whole process
  shares) and a lock (the limiter is per loop; the connection is not).

The connection opens on first use, in the worker thread, where the owner's ``setup`` creates its tables (a setup
that raises closes it); it closes on :meth:`Worker.close` — shielded from cancellation, and bounded: a close that
would wait past :data:`CLOSE_TIMEOUT` for a statement running on the connection leaves it to a thread of its own,
which closes it when the statement returns — and a worker used again opens a new one.  What differs
by driver is a parameter: how to connect (:mod:`agentactors._sqlite`, :mod:`agentactors._postgres`) and, for a
server that may drop a connection, how to tell a connection is dead (it is thrown away: the next call opens a new
one) — asked after a call raised, and before each call too, since a call may answer its failures as values (a
journal's batch of commits does: each commit has its own outcome) and leave a dead connection behind — and, if the
owner says so, what a driver's error becomes when it leaves a call, opening the connection included (the owner's
typed error: SQLite's naming its file, :mod:`agentactors._sqlite`; PostgreSQL's naming its DSN, passwords masked,
and still the psycopg error it replaces, :mod:`agentactors._postgres`).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final, Generic, Protocol, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.lowlevel import RunVar

__all__ = ["CLOSE_TIMEOUT", "Worker"]

log = logging.getLogger("agentactors")

T = TypeVar("T")

#: Seconds :meth:`Worker.close` waits for a call running on the connection before it leaves it to be closed in the
#: background (see there).  A statement's own bounds (``busy_timeout``; PostgreSQL's ``lock_timeout``,
#: ``statement_timeout`` and the watchdog, 37.5 s by default) may be longer: the caller does not wait them out.
CLOSE_TIMEOUT: Final = 10.0


class _Connection(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Connection)


# Each worker's limiter, per event loop: one RunVar for all of them, its map forgetting a worker once it is
# collected.  (A RunVar per worker was kept by anyio for the loop's whole life, with its limiter: a service opening a
# store or journal per request, tenant or test grew by ~1 KB for each one it closed.)
_LIMITERS: RunVar[weakref.WeakKeyDictionary[Worker[Any], anyio.CapacityLimiter]] = RunVar("agentactors-db-workers")


class Worker(Generic[C]):
    """One connection, used one call at a time from worker threads (see the module docstring).

    :param connect: opens a connection (in the worker thread).
    :param setup: run in the worker thread on each new connection (its tables); raising closes it.
    :param name: the worker's name (its owner's): names the thread that closes its connection in the background.
    :param dead: ``dead(connection)``, asked after a call raised and before each call: true throws the connection
        away (closed; the next call opens a new one); by default a connection outlives the calls that fail on it.
    :param typed: ``typed(error)``, asked of an exception leaving a call (its connection's opening and setup
        included): an error to raise in its place (the original its cause), or ``None`` to raise it as it is.
    """

    __slots__ = ("__weakref__", "_connect", "_dead", "_lock", "_typed", "conn", "name", "setup")

    def __init__(
        self,
        connect: Callable[[], C],
        setup: Callable[[C], None],
        name: str,
        *,
        dead: Callable[[C], bool] | None = None,
        typed: Callable[[Exception], Exception | None] | None = None,
    ) -> None:
        self._connect = connect
        self.setup = setup
        self._dead = dead
        self._typed = typed
        self.conn: C | None = None
        self._lock = threading.Lock()
        self.name = name

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in a worker thread, alone on the connection (opened first if need be).

        Cancellation: the thread is not abandoned — a cancelled caller waits for ``fn`` to return (a driver call
        cannot be interrupted, and the connection must not be left mid-call), then the cancellation goes on.
        """
        return await anyio.to_thread.run_sync(self._locked, fn, args, limiter=self._token())

    def call_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`call` from a thread of one's own (not the event loop's)."""
        return self._locked(fn, args)

    async def close(self, bound: float | None = None) -> bool:
        """Close the connection, after the call running on it (the next call opens a new one).  Idempotent.

        Whether it is closed on return: ``False`` when the call running on it outlasted the bound (``bound``
        seconds; by default :data:`CLOSE_TIMEOUT`).

        Cancellation: shielded and bounded.  A caller cancelled before or during the close still closes the
        connection (so ``async with`` left by a cancellation closes its owner).  It waits for the call running on
        the connection (a statement cannot be interrupted) at most the bound; past it, it returns, and the
        connection is closed in the background as soon as that call returns — a thread of its own waits for it
        (the statements' own bounds end them: ``busy_timeout``, PostgreSQL's timeouts).  Then a caller that was
        cancelled gets its cancellation, here.
        """
        started = False

        def close() -> None:
            nonlocal started
            started = True
            self._close()

        closed = False
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(CLOSE_TIMEOUT if bound is None else bound):
                # Abandoned past the bound: a close that started (waiting for another event loop's call on the
                # connection, or in the driver's close) finishes in its thread.
                await anyio.to_thread.run_sync(close, limiter=self._token(), abandon_on_cancel=True)
                closed = True
        if not closed and not started:  # queued behind this loop's running call: a thread of its own closes it then
            threading.Thread(target=self.close_blocking, name=f"{self.name}-close", daemon=True).start()
        await anyio.lowlevel.checkpoint_if_cancelled()  # the caller's cancellation, now that the close is done
        return closed

    def close_blocking(self) -> None:
        """Close the connection from a thread of one's own, once the call running on it returned (it waits)."""
        try:
            self._close()
        except Exception as exc:  # a thread nobody waits for: said, not raised into the void
            log.debug("closing a database connection raised %s", type(exc).__name__)

    def close_sync(self) -> None:
        """Close the connection now if no call is using it (a finaliser: its owner was collected).  Never waits.

        A finaliser runs wherever the garbage collector does — maybe in the event loop's thread — so a call still
        running on the connection (one abandoned by a cancelled task) is not waited for: the connection is then
        left to its own finaliser.
        """
        if not self._lock.acquire(blocking=False):
            return
        try:
            conn, self.conn = self.conn, None
            if conn is not None:
                conn.close()
        finally:
            self._lock.release()

    def _token(self) -> anyio.CapacityLimiter:
        """This worker's limiter in the running event loop (a limiter belongs to the loop that made it)."""
        limiters = _LIMITERS.get(None)
        if limiters is None:
            limiters = weakref.WeakKeyDictionary()
            _LIMITERS.set(limiters)
        limiter = limiters.get(self)
        if limiter is None:
            limiter = limiters[self] = anyio.CapacityLimiter(1)
        return limiter

    def _locked(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        with self._lock:
            try:
                conn = self.conn
                if conn is not None and self._dead is not None and self._dead(conn):
                    # Found dead by an earlier call that did not raise: one that answers its failures as values (a
                    # journal's batch of commits, each with its own outcome) leaves the connection here, broken.
                    self.conn = None
                    conn.close()
                    conn = None
                if conn is None:
                    conn = self.conn = self._open()
                try:
                    return fn(conn, *args)
                except BaseException:
                    if self._dead is not None and self._dead(conn):  # e.g. the server went away
                        self.conn = None
                        conn.close()
                    raise
            except Exception as exc:  # the rare path: what the owner makes of a driver's error (typed)
                typed = None if self._typed is None else self._typed(exc)
                if typed is None:
                    raise
                raise typed from exc

    def _open(self) -> C:
        conn = self._connect()
        try:
            self.setup(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _close(self) -> None:
        with self._lock:
            conn, self.conn = self.conn, None
            if conn is not None:
                conn.close()
