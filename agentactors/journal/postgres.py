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
error or a log line.

**Layout.**  The SQLite journal's tables (``agentactors_runs``, ``agentactors_steps``) plus ``owner`` and
``lease_until`` on runs, and ``agentactors_parked(key, value, updated)`` for :meth:`PostgresJournal.park`.
Created when first connected (``CREATE … IF NOT EXISTS`` under a transaction-scoped advisory lock, so replicas
starting together do not race on the catalog).
"""

from __future__ import annotations

from typing import Any, Final

import anyio
import anyio.to_thread
import attrs

from .._postgres import Worker, safe_dsn
from ..loop.tape import Commit
from ..messages import Message
from ._group import GroupCommit
from ._lease import Keeper, check_lease, is_free, new_owner
from ._parking import check_key, check_value
from ._rows import Encoded, decode_run, encode
from ._tapes import Tapes
from .children import Orphans
from .records import RecordedRun, RunNotRecordedError
from .store import LeaseLostError

__all__ = ["PostgresJournal"]

_RUNS: Final = "agentactors_runs"
_STEPS: Final = "agentactors_steps"
_PARKED: Final = "agentactors_parked"
_NOW: Final = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
_LOCK: Final = 0x61676A6F75726E  # the advisory lock that serializes creating the tables
_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {_RUNS} ("
    " run_id TEXT PRIMARY KEY, agent TEXT, inputs TEXT NOT NULL, status TEXT NOT NULL, content TEXT,"
    " started DOUBLE PRECISION NOT NULL, ended DOUBLE PRECISION, parent_run_id TEXT, origin TEXT,"
    " owner TEXT, lease_until DOUBLE PRECISION)",
    f"CREATE INDEX IF NOT EXISTS {_RUNS}_status ON {_RUNS} (status)",
    f"CREATE INDEX IF NOT EXISTS {_RUNS}_parent ON {_RUNS} (parent_run_id)",
    f"CREATE TABLE IF NOT EXISTS {_STEPS} ("
    " run_id TEXT NOT NULL, step INTEGER NOT NULL, response TEXT, results TEXT, PRIMARY KEY (run_id, step))",
    f"CREATE TABLE IF NOT EXISTS {_PARKED} ("
    " key TEXT PRIMARY KEY, value TEXT NOT NULL, updated DOUBLE PRECISION NOT NULL)",
)


class PostgresJournal(Tapes):
    """A step journal in PostgreSQL: ``Runtime(journal=PostgresJournal(dsn))`` (the ``[postgres]`` extra).

    :param dsn: a libpq connection string or URL (``postgresql://user:password@host:5432/db``); its password is
        never shown (``repr`` prints the DSN with ``***``).
    :param lease: seconds a run stays leased to this object without a renewal (renewed every third of it while
        the process lives); a recoverer takes a run whose lease expired.
    :param connect_timeout: seconds a connection attempt waits for the server.
    :raises ValueError: ``lease`` under one second.

    What is journaled and what is not is :class:`~agentactors.journal.SqliteJournal`'s rule.  Also an async
    context manager (closes on exit).  The connection opens on first use; ``psycopg`` is imported then, so a
    missing extra is an :class:`ImportError` naming it at the first call.
    """

    __slots__ = ("_group", "_keeper", "_mine", "_orphans", "_renewer", "_worker", "lease", "owner")

    def __init__(self, dsn: str, *, lease: float = 30.0, connect_timeout: float = 10.0) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise TypeError("a PostgresJournal takes a DSN: a non-empty str")
        self.lease = check_lease(lease)
        #: This object's lease owner id (host, PID namespace, PID, a nonce).
        self.owner = new_owner()
        what = "PostgresJournal"
        self._worker = Worker(dsn, _setup, what=what, name=f"agentactors-pg-journal-{id(self)}",
                              connect_timeout=connect_timeout)
        # The lease keeper's own connection: a renewal never waits behind a commit, nor a commit behind it.
        self._renewer = Worker(dsn, _setup, what=what, name=f"agentactors-pg-lease-{id(self)}",
                               connect_timeout=connect_timeout)
        self._keeper = Keeper(self._renew, self.lease / 3)
        # Concurrent runs' commits share a thread hop and a transaction (agentactors.journal._group).
        self._group: GroupCommit[_Item] = GroupCommit(self._apply_many, f"agentactors-pg-group-{id(self)}")
        self._mine: set[str] = set()
        self._orphans = Orphans()

    def __repr__(self) -> str:
        return f"PostgresJournal({safe_dsn(self._worker.dsn)!r})"

    async def __aenter__(self) -> PostgresJournal:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- committing (open_run, resume_run and recover: agentactors.journal._tapes) ----------

    async def commit(
        self, run_id: str, agent: str | None, inputs: tuple[Message, ...], commit: Commit, origin: Any = None
    ) -> None:
        """Apply ``commit`` for ``run_id`` in one transaction, if this object still holds the run's lease.

        :raises LeaseLostError: another recoverer took the run over (this object's lease had expired).
        :raises JournalFormatError: the commit holds a value past the JSON policy (nothing was written).
        """
        encoded = encode(run_id, inputs, commit, origin)  # before the transaction: a bad value takes no lock
        await self._group.commit((run_id, agent, encoded))
        if commit.end is not None:
            self._mine.discard(run_id)
            self._orphans.forget(run_id)

    # -- reading and claiming -------------------------------------------------------------------------

    async def load_run(self, run_id: str) -> RecordedRun:
        """The run ``run_id`` as committed.  :raises RunNotRecordedError: no such run."""
        run = await self._worker.call(_load, run_id)
        if run is None:
            raise RunNotRecordedError(f"the journal {safe_dsn(self._worker.dsn)!r} holds no run {run_id!r}")
        return run

    async def unfinished(self) -> list[RecordedRun]:
        """The top-level runs nothing said ended whose lease is free (expired, or its process gone here)."""
        rows = await self._worker.call(_running)
        runs = []
        for run_id, owner, expired in rows:
            if run_id in self._mine or not is_free(owner, expired, self.owner):
                continue
            run = await self._worker.call(_load, run_id)
            if run is not None and not run.finished:
                runs.append(run)
        return runs

    async def claim(self, run_id: str) -> RecordedRun | None:
        """Lease ``run_id`` (and its unfinished children) to this object; the run as committed, or ``None``."""
        run = await self._worker.call(_claim, run_id, self.owner, self.lease)
        if run is not None:
            self._mine.add(run_id)
            self._keeper.start()
        return run

    # -- parking ------------------------------------------------------------------------------------

    async def park(self, key: str, value: str) -> None:
        """Keep the JSON text ``value`` under ``key`` (as :meth:`SqliteJournal.park`)."""
        await self._worker.call(_park, check_key(key), check_value(key, value))

    async def parked(self, key: str) -> str | None:
        """The JSON text parked under ``key``, or ``None`` (as :meth:`SqliteJournal.parked`)."""
        value = await self._worker.call(_parked, check_key(key))
        return None if value is None else check_value(key, value, stored=True)

    async def unpark(self, key: str) -> None:
        """Forget what is parked under ``key`` (nothing happens if nothing is)."""
        await self._worker.call(_unpark, check_key(key))

    async def aclose(self) -> None:
        """Stop renewing leases and close the connections (the next use opens new ones).  Idempotent.

        The runs still running here keep their lease until it expires: close after they end.
        """
        await anyio.to_thread.run_sync(self._keeper.stop)  # it may be waiting on the database: not on the loop
        await self._renewer.close()
        await self._worker.close()

    async def _apply_many(self, items: list[_Item]) -> list[BaseException | None]:
        return await self._worker.call(_apply_many, items, self.owner, self.lease)

    def _renew(self) -> None:
        """In the keeper's thread: push the expiry of every run this object holds."""
        self._renewer.call_sync(_renew, self.owner, self.lease)


# --- what runs in the worker thread --------------------------------------------------------------------


def _setup(conn: Any) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        for statement in _SCHEMA:
            conn.execute(statement)


def _lost(run_id: str) -> LeaseLostError:
    return LeaseLostError(
        f"run {run_id!r} was taken over by another recoverer (this journal's lease on it had expired): "
        "it goes on there",
        run_id=run_id,
    )


#: One run's commit, encoded: ``(run_id, agent, what it writes)``.
_Item = tuple[str, "str | None", Encoded]


def _apply_many(conn: Any, items: list[_Item], owner: str, lease: float) -> list[BaseException | None]:
    """Each commit as one statement, in autocommit (atomic by itself: one round trip), all in one thread hop."""
    errors: list[BaseException | None] = []
    for item in items:
        try:
            _write(conn, *item, owner, lease)
        except Exception as exc:
            errors.append(exc)
        else:
            errors.append(None)
    return errors


# One commit is ONE statement: data-modifying CTEs, so it is atomic in autocommit and costs one round trip to the
# server (BEGIN, three statements and COMMIT were five).  ``lease`` renews the run's lease — or, for the run's
# begin, inserts it — only if this owner holds it; the steps are written only if it did (``EXISTS``), and the
# statement answers whether it did.  The run's end is set by the same UPDATE as the lease (a statement may change
# a row once).
_LEASE: Final = (
    f"UPDATE {_RUNS} SET lease_until = {_NOW} + %(lease)s, status = COALESCE(%(end)s::text, status),"
    " content = CASE WHEN %(end)s::text IS NULL THEN content ELSE %(content)s END,"
    f" ended = CASE WHEN %(end)s::text IS NULL THEN ended ELSE {_NOW} END"
    " WHERE run_id = %(run)s AND owner = %(owner)s RETURNING 1"
)
_BEGIN: Final = (
    f"INSERT INTO {_RUNS} AS r (run_id, agent, inputs, status, started, parent_run_id, origin, owner, lease_until)"
    f" VALUES (%(run)s, %(agent)s, %(begin)s, 'running', {_NOW}, %(parent)s, %(origin)s, %(owner)s,"
    f" {_NOW} + %(lease)s) ON CONFLICT (run_id) DO UPDATE SET status = 'running', ended = NULL,"
    " lease_until = EXCLUDED.lease_until WHERE r.owner = EXCLUDED.owner RETURNING 1"
)
_STEPS_CTE: Final = (
    f", written AS (INSERT INTO {_STEPS} AS s (run_id, step, response, results)"
    " SELECT %(run)s, t.n, t.response, t.results"
    " FROM unnest(%(steps)s::int[], %(responses)s::text[], %(results)s::text[]) AS t(n, response, results)"
    " WHERE EXISTS (SELECT 1 FROM lease) ON CONFLICT (run_id, step) DO UPDATE SET"
    " response = COALESCE(EXCLUDED.response, s.response), results = COALESCE(EXCLUDED.results, s.results))"
)


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
        "lease": lease, "end": e.end, "content": e.content,
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
        raise _lost(run_id)


def _running(conn: Any) -> list[tuple[str, str | None, bool]]:
    rows = conn.execute(  # a child is recovered by its parent's recovery, never on its own
        f"SELECT run_id, owner, lease_until IS NULL OR lease_until < {_NOW} FROM {_RUNS}"
        " WHERE status = 'running' AND parent_run_id IS NULL ORDER BY started"
    ).fetchall()
    return [(str(r[0]), r[1], bool(r[2])) for r in rows]


def _load(conn: Any, run_id: str) -> RecordedRun | None:
    with conn.transaction():  # one snapshot: a run and its steps of one commit
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return _load_in(conn, run_id)


def _load_in(conn: Any, run_id: str) -> RecordedRun | None:
    row = conn.execute(
        f"SELECT agent, inputs, status, content, origin FROM {_RUNS} WHERE run_id = %s", (run_id,)
    ).fetchone()
    if row is None:
        return None
    steps = conn.execute(
        f"SELECT step, response, results FROM {_STEPS} WHERE run_id = %s ORDER BY step", (run_id,)
    ).fetchall()
    ids = conn.execute(f"SELECT run_id FROM {_RUNS} WHERE parent_run_id = %s ORDER BY started", (run_id,)).fetchall()
    children = tuple(c for c in (_load_in(conn, str(r[0])) for r in ids) if c is not None)
    return decode_run(run_id, tuple(row), steps, children)


def _claim(conn: Any, run_id: str, owner: str, lease: float) -> RecordedRun | None:
    with conn.transaction():
        row = conn.execute(
            f"SELECT status, owner, lease_until IS NULL OR lease_until < {_NOW} FROM {_RUNS}"
            " WHERE run_id = %s FOR UPDATE",
            (run_id,),
        ).fetchone()
        if row is None or row[0] != "running" or not is_free(row[1], bool(row[2]), owner):
            return None
        conn.execute(  # the run and its unfinished children: their begins, when started again, are this owner's
            f"WITH RECURSIVE tree(id) AS (SELECT %s::text UNION SELECT r.run_id FROM {_RUNS} r"
            " JOIN tree ON r.parent_run_id = tree.id)"
            f" UPDATE {_RUNS} SET owner = %s, lease_until = {_NOW} + %s"
            " WHERE run_id IN (SELECT id FROM tree) AND status = 'running'",
            (run_id, owner, lease),
        )
        return _load_in(conn, run_id)


def _renew(conn: Any, owner: str, lease: float) -> None:
    conn.execute(
        f"UPDATE {_RUNS} SET lease_until = {_NOW} + %s WHERE owner = %s AND status = 'running'", (lease, owner)
    )


def _park(conn: Any, key: str, value: str) -> None:
    conn.execute(
        f"INSERT INTO {_PARKED} (key, value, updated) VALUES (%s, %s, {_NOW})"
        " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated = EXCLUDED.updated",
        (key, value),
    )


def _parked(conn: Any, key: str) -> Any:
    row = conn.execute(f"SELECT value FROM {_PARKED} WHERE key = %s", (key,)).fetchone()
    return None if row is None else row[0]


def _unpark(conn: Any, key: str) -> None:
    conn.execute(f"DELETE FROM {_PARKED} WHERE key = %s", (key,))
