"""``PostgresJournal``: each step of each run committed to PostgreSQL as it completes, shared by hosts.

``Runtime(journal=PostgresJournal("postgresql://app@db/app"))`` keeps what
:class:`~agentactors.journal.SqliteJournal` keeps — a run's start, each model response, each tool step's results,
its end, each in one transaction before the run goes on — in a database any number of processes on any number
of hosts share.  The guarantees are the SQLite journal's:

* **atomic commits**: a :class:`~agentactors.loop.tape.Commit` is one transaction (``READ COMMITTED``; every row
  it touches is the run's own, so there is nothing for another transaction to interleave with);
* **the JSON policy** (:mod:`agentactors._json`) at commit and at load
  (:class:`~agentactors.journal.JournalFormatError`);
* **recovery**: ``unfinished``, ``claim``, ``resume_run``, ``load_run``, ``recover`` as the
  :class:`~agentactors.journal.JournalStore` port says;
* **leases** (:mod:`agentactors.journal._lease`): every run is leased to the journal object running it, renewed by
  a thread while its process lives; a claim is ``SELECT … FOR UPDATE`` then ``UPDATE`` in one transaction, so of
  several replicas recovering at once exactly one takes each run.  Expiries are the *server's* clock
  (``clock_timestamp()``): hosts' clocks may disagree, the database's is one.

Driver and threads: :mod:`agentactors._postgres` (psycopg 3's sync connection in worker threads: it works on
asyncio and trio; its ``AsyncConnection`` is asyncio-only).  The DSN's password never appears in a ``repr``, an
error or a log line.  What it does as the SQLite journal does is :mod:`agentactors.journal._sql`; this module
keeps its PostgreSQL: the tables, and a commit as one statement.

**Failures**: a call the database fails — a row held locked past ``lock_timeout``, a statement past
``statement_timeout``, a server that stopped answering or went away mid-call — raises
:class:`PostgresJournalError` (a ``JournalError``, and still the psycopg error it replaces); a batch's commit gets
its own.  The journal goes on: its next call opens a new connection if the old one is gone.  A connection it
cannot open — the server stopped or restarting, a port nothing listens on, a password refused — raises
:class:`PostgresJournalConnectionError` (a ``PostgresJournalError``, and a ``ConnectionError``: what it raised
before), its text scrubbed of the passwords, with neither cause nor context.

**Layout.**  The SQLite journal's tables (``agentactors_runs``, ``agentactors_steps``) plus ``owner`` and
``lease_until`` on runs, and ``agentactors_parked(key, value, updated)`` for :meth:`PostgresJournal.park`.
Created when first connected (``CREATE … IF NOT EXISTS`` under a transaction-scoped advisory lock, so replicas
starting together do not race on the catalog).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final

import attrs

from .._postgres import DIALECT, NOW, Timeouts, Worker, reduce_typed, register_passwords, safe_dsn, typed
from ._rows import Encoded
from ._sql import PARKED, RUNS, STEPS, Item, SqlJournal, lost
from .records import JournalError

__all__ = ["PostgresJournal", "PostgresJournalConnectionError", "PostgresJournalError"]


class PostgresJournalError(JournalError):
    """A :class:`PostgresJournal`'s database failed a call: a row another transaction held locked past
    ``lock_timeout``, a statement past ``statement_timeout`` (or cancelled by an operator), a server that did not
    answer within that bound, or one that went away mid-call (a restart, a crash), a full disk, a role refused a
    table.

    Its text names the journal's DSN (its passwords masked) and the server's reason with what it means; ``dsn`` is
    that DSN, ``sqlstate`` the server's code for the failure (``"55P03"`` a lock, ``"57014"`` a cancel,
    ``"57P01"`` a terminated backend; ``None`` when libpq's, not the server's: a lost connection, our deadline),
    psycopg's own error its ``__cause__``.  Also an instance of the psycopg class it replaces — what the journal
    raised before — so ``except psycopg.errors.LockNotAvailable`` or ``except psycopg.OperationalError`` catches it
    still: its class is made once for each psycopg class, deriving from both (its ``diag`` and ``pgresult`` are
    those of the error it replaces), and is named as this one.  A commit that failed wrote nothing —
    or, its connection lost, may have landed (the text says so) — what was committed before is kept, and the
    journal goes on: its next call tries again (over a new connection if that one is gone), and
    :meth:`PostgresJournal.aclose` closes it.
    """

    def __init__(self, message: str, *, dsn: str | None = None, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.dsn = dsn
        self.sqlstate = sqlstate

    def __reduce__(self) -> str | tuple[Any, ...]:
        return reduce_typed(self) or super().__reduce__()


class PostgresJournalConnectionError(PostgresJournalError, ConnectionError):
    """A :class:`PostgresJournal` could not open a connection to its database: the server refused it (stopped,
    restarting, a port nothing listens on), did not accept it within ``connect_timeout``, refused the role or its
    password, or the DSN cannot be parsed.

    A :class:`PostgresJournalError` — so ``except JournalError`` around a journaled run catches the most common
    outage, a server restarting — and a :class:`ConnectionError`, what the journal raised before, so ``except
    ConnectionError`` catches it still.  Not a psycopg error (it never was).  Its text is ``PostgresJournal could
    not connect to <the DSN, its passwords masked>: <libpq's reason, the passwords scrubbed>``; ``dsn`` is that
    DSN, ``sqlstate`` ``None``.  It has neither cause nor context: psycopg's error holds the failed connection,
    whose ``repr`` lists every option, the password included.  Nothing was written; the journal's next call tries
    to connect again.
    """


_LOCK: Final = 0x61676A6F75726E  # the advisory lock that serializes creating the tables
_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {RUNS} ("
    " run_id TEXT PRIMARY KEY, agent TEXT, inputs TEXT NOT NULL, status TEXT NOT NULL, content TEXT,"
    " started DOUBLE PRECISION NOT NULL, ended DOUBLE PRECISION, parent_run_id TEXT, origin TEXT,"
    " owner TEXT, lease_until DOUBLE PRECISION)",
    f"CREATE INDEX IF NOT EXISTS {RUNS}_status ON {RUNS} (status)",
    f"CREATE INDEX IF NOT EXISTS {RUNS}_parent ON {RUNS} (parent_run_id)",
    f"CREATE TABLE IF NOT EXISTS {STEPS} ("
    " run_id TEXT NOT NULL, step INTEGER NOT NULL, response TEXT, results TEXT, PRIMARY KEY (run_id, step))",
    f"CREATE TABLE IF NOT EXISTS {PARKED} ("
    " key TEXT PRIMARY KEY, value TEXT NOT NULL, updated DOUBLE PRECISION NOT NULL)",
)


class PostgresJournal(SqlJournal):
    """A step journal in PostgreSQL: ``Runtime(journal=PostgresJournal(dsn))`` (the ``[postgres]`` extra).

    :param dsn: a libpq connection string or URL (``postgresql://user:password@host:5432/db``); its password is
        never shown (``repr`` prints the DSN with ``***``; it is registered for redaction).
    :param lease: seconds a run stays leased to this object without a renewal (renewed every third of it while
        the process lives); a recoverer takes a run whose lease expired.
    :param connect_timeout: seconds a connection attempt waits for the server.
    :param statement_timeout: seconds one statement may run before the server cancels it
        (:class:`PostgresJournalError`, also psycopg's ``QueryCanceled``), and a transaction of ours may sit idle; a
        server that does not answer at all (stopped, cut off) is given this and a grace, then the call fails
        (:class:`PostgresJournalError`, also psycopg's ``OperationalError``; :mod:`agentactors._postgres`).
        ``None``: the server's setting, and no deadline of ours.
    :param lock_timeout: seconds a statement may wait for a row another transaction holds locked
        (:class:`PostgresJournalError`, also ``LockNotAvailable``); ``None``: the server's setting.
    :raises ValueError: ``lease`` under one second; a timeout that is not a finite number of seconds > 0.

    Every call ends: a commit is shielded from cancellation (it happens whole or not at all), so these bounds
    are what ends one on a database that no longer answers.  TCP keepalives are on unless the DSN sets them.

    What is journaled and what is not is :class:`~agentactors.journal.SqliteJournal`'s rule.  Also an async
    context manager (closes on exit).  The connection opens on first use; ``psycopg`` is imported then, so a
    missing extra is an :class:`ImportError` naming it at the first call.
    """

    __slots__ = ("_dsn",)

    def __init__(
        self,
        dsn: str,
        *,
        lease: float = 30.0,
        connect_timeout: float = 10.0,
        statement_timeout: float | None = 30.0,
        lock_timeout: float | None = 10.0,
    ) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise TypeError("a PostgresJournal takes a DSN: a non-empty str")
        self._dsn = dsn
        register_passwords(dsn)  # now, not with the first connection (made lazily): nothing shows them meanwhile
        timeouts = Timeouts(connect_timeout, statement_timeout, lock_timeout)  # checked now, not when connecting
        # What psycopg's errors become — raised, or a batch's commit's own — PostgresJournalError, naming the DSN.
        errors = typed(PostgresJournalError, "journal", dsn, timeouts)
        worker = partial(
            Worker, dsn, _setup, what="PostgresJournal", connect_timeout=connect_timeout,
            statement_timeout=statement_timeout, lock_timeout=lock_timeout, typed=errors,
            unreachable=PostgresJournalConnectionError,
        )
        super().__init__(lease, DIALECT, partial(_apply_many, errors), worker, "pg")

    def __repr__(self) -> str:
        return f"PostgresJournal({self._where()!r})"

    def _where(self) -> str:
        return safe_dsn(self._dsn)


# --- what runs in the worker thread --------------------------------------------------------------------


def _setup(conn: Any) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        for statement in _SCHEMA:
            conn.execute(statement)


def _apply_many(
    typed: Callable[[Exception], Exception | None], conn: Any, items: list[Item], owner: str, lease: float
) -> list[BaseException | None]:
    """Each commit as one statement, in autocommit (atomic by itself: one round trip), all in one thread hop; a
    commit's own failure is its outcome, psycopg's error made typed by ``typed`` (:class:`PostgresJournalError`)."""
    errors: list[BaseException | None] = []
    for item in items:
        try:
            _write(conn, *item, owner, lease)
        except Exception as exc:
            errors.append(typed(exc) or exc)
        else:
            errors.append(None)
    return errors


# One commit is ONE statement: data-modifying CTEs, so it is atomic in autocommit and costs one round trip to the
# server (BEGIN, three statements and COMMIT were five).  ``lease`` renews the run's lease — or, for the run's
# begin, inserts it — only if this owner holds it; the steps are written only if it did (``EXISTS``), and the
# statement answers whether it did.  The run's end is set by the same UPDATE as the lease (a statement may change
# a row once).
_LEASE: Final = (
    f"UPDATE {RUNS} SET lease_until = {NOW} + %(lease)s, status = COALESCE(%(end)s::text, status),"
    " content = CASE WHEN %(end)s::text IS NULL THEN content ELSE %(content)s END,"
    f" ended = CASE WHEN %(end)s::text IS NULL THEN ended ELSE {NOW} END"
    " WHERE run_id = %(run)s AND owner = %(owner)s RETURNING 1"
)
_BEGIN: Final = (
    f"INSERT INTO {RUNS} AS r (run_id, agent, inputs, status, started, parent_run_id, origin, owner, lease_until)"
    f" VALUES (%(run)s, %(agent)s, %(begin)s, 'running', {NOW}, %(parent)s, %(origin)s, %(owner)s,"
    f" {NOW} + %(lease)s) ON CONFLICT (run_id) DO UPDATE SET status = 'running', ended = NULL,"
    " lease_until = EXCLUDED.lease_until WHERE r.owner = EXCLUDED.owner RETURNING 1"
)
_STEPS_CTE: Final = (
    f", written AS (INSERT INTO {STEPS} AS s (run_id, step, response, results)"
    " SELECT %(run)s, t.n, t.response, t.results"
    " FROM unnest(%(steps)s::int[], %(responses)s::text[], %(results)s::text[]) AS t(n, response, results)"
    " WHERE EXISTS (SELECT 1 FROM lease) ON CONFLICT (run_id, step) DO UPDATE SET"
    " response = COALESCE(EXCLUDED.response, s.response), results = COALESCE(EXCLUDED.results, s.results))"
)


def _text(content: str | None) -> str | None:
    """The answer's readable copy as ``TEXT`` keeps it: PostgreSQL's refuses NUL, kept as U+FFFD (the answer
    itself is in its step's response, JSON that escapes it, read back whole)."""
    return content if content is None or "\x00" not in content else content.replace("\x00", "\ufffd")


def _write(conn: Any, run_id: str, agent: str | None, e: Encoded, owner: str, lease: float) -> None:
    if e.begin is not None and e.end is not None:  # never from a tape (its begin commits alone): two statements
        with conn.transaction():
            _write(conn, run_id, agent, attrs.evolve(e, end=None, content=None), owner, lease)
            _write(conn, run_id, agent, attrs.evolve(e, begin=None, responses=(), results=None), owner, lease)
        return
    steps: dict[int, list[str | None]] = {}
    for n, doc in e.responses:
        steps.setdefault(n, [None, None])[0] = doc
    if e.results is not None:
        steps.setdefault(e.results[0], [None, None])[1] = e.results[1]
    params: dict[str, Any] = {
        "run": run_id, "agent": agent, "begin": e.begin, "parent": e.parent, "origin": e.origin, "owner": owner,
        "lease": lease, "end": e.end, "content": _text(e.content),
    }
    sql = f"WITH lease AS ({_BEGIN if e.begin is not None else _LEASE})"
    if steps:
        numbers = sorted(steps)
        params.update(
            steps=numbers, responses=[steps[n][0] for n in numbers], results=[steps[n][1] for n in numbers]
        )
        sql += _STEPS_CTE
    row = conn.execute(sql + " SELECT count(*) FROM lease", params).fetchone()
    if row is None or row[0] != 1:
        raise lost(run_id)

