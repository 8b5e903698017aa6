"""``SqliteJournal``: each step of each run committed to a SQLite file as it completes.

``Runtime(journal=SqliteJournal("runs.db"))``: every top-level run started in the runtime gets a
:class:`~agentactors.loop.tape.Tape` whose writer is this journal, so the loop commits — each in one
transaction, before the run goes on (:mod:`agentactors.loop.tape` says when) — the run's start (its id, agent
and input), each model response, each tool step's results, and how the run ended.  What a crash leaves
(runs still ``"running"``) is what :meth:`SqliteJournal.unfinished` lists and ``rt.recover()`` finishes; any
run can be read back (:meth:`SqliteJournal.load_run`) for ``replay`` and ``fork``.

Stdlib ``sqlite3`` in worker threads, one connection serialized by the journal's own one-token limiter
— for the reasons :mod:`agentactors.sessions.sqlite` gives — in WAL mode, ``synchronous=NORMAL`` by default
(a commit survives the process crashing; ``"FULL"`` for a power cut), ``BEGIN IMMEDIATE`` transactions.

**Layout.**  ``agentactors_runs(run_id PRIMARY KEY, agent, inputs, status, content, started, ended)`` and
``agentactors_steps(run_id, step, response, results, PRIMARY KEY (run_id, step))``; ``inputs``, ``response``
and ``results`` are JSON in the sessions' lossless codec (:mod:`agentactors.journal.codec`).  A step whose
``results`` is ``NULL`` asked for tools that were started but never committed.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

from ..loop.result import RunResult
from ..loop.tape import Commit, Tape
from ..messages import Message
from ..sessions.codec import messages_from_json, messages_to_json, result_from_json, result_to_json
from .codec import response_from_json, response_to_json
from .records import RecordedRun, RecordedStep, RunNotRecordedError
from .recovery import adopted, recover

__all__ = ["SqliteJournal"]

T = TypeVar("T")

_RUNS: Final = "agentactors_runs"
_STEPS: Final = "agentactors_steps"
_SYNCHRONOUS: Final = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {_RUNS} ("
    " run_id TEXT PRIMARY KEY NOT NULL, agent TEXT, inputs TEXT NOT NULL, status TEXT NOT NULL,"
    " content TEXT, started REAL NOT NULL, ended REAL)",
    f"CREATE INDEX IF NOT EXISTS {_RUNS}_status ON {_RUNS} (status)",
    f"CREATE TABLE IF NOT EXISTS {_STEPS} ("
    " run_id TEXT NOT NULL, step INTEGER NOT NULL, response TEXT, results TEXT,"
    " PRIMARY KEY (run_id, step))",
)


class SqliteJournal:
    """A step journal in a SQLite file: ``Runtime(journal=SqliteJournal("runs.db"))``.

    :param path: the database file (created if missing; it may be the sessions' file too: the tables differ).
    :param busy_timeout: seconds a commit waits for another connection's write lock.
    :param synchronous: SQLite's ``synchronous``: ``"NORMAL"`` (default), ``"FULL"``, ``"EXTRA"`` or ``"OFF"``.
    :raises ValueError: a negative ``busy_timeout``, an unknown ``synchronous``.

    Delegated runs (a tool that runs an agent) and resumed runs are not journaled: the first is re-run by
    its parent's tool step when that is recovered, the second is the paused run's decision, already kept
    by whoever holds the pause (a session).  Also an async context manager (closes on exit).
    """

    __slots__ = ("_conn", "_limiter", "_lock", "_mine", "busy_timeout", "path", "synchronous")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL",
    ) -> None:
        if isinstance(busy_timeout, bool) or not busy_timeout >= 0 or math.isinf(busy_timeout):
            raise ValueError(f"busy_timeout must be a finite number of seconds >= 0, not {busy_timeout!r}")
        mode = str(synchronous).upper()
        if mode not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {sorted(_SYNCHRONOUS)}, not {synchronous!r}")
        self.path = os.fspath(path)
        self.busy_timeout = float(busy_timeout)
        self.synchronous = mode
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._limiter: RunVar[anyio.CapacityLimiter] = RunVar(f"agentactors-sqlite-journal-{id(self)}")
        #: Runs this object opened (running here, not left by a crash): recover() leaves them alone.
        self._mine: set[str] = set()

    def __repr__(self) -> str:
        return f"SqliteJournal({self.path!r})"

    async def __aenter__(self) -> SqliteJournal:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the loop's port -----------------------------------------------------------------------------

    def open_run(
        self,
        run_id: str | None,
        agent: str | None,
        inputs: tuple[Message, ...],
        *,
        parent_run_id: str | None,
        resumed: bool,
    ) -> Tape | None:
        """The tape of a run starting in a runtime with this journal (see the class for what is kept)."""
        if run_id is None or parent_run_id is not None or resumed:
            return None
        tape = adopted()
        if tape is not None:  # a run recover() is finishing: its committed steps, its own id
            return tape
        self._mine.add(run_id)
        return Tape(writer=_Writer(self, run_id, agent, inputs))

    def resume_run(self, recorded: RecordedRun) -> Tape:
        """The tape of a run :meth:`recover` goes on with: its committed steps served, its next ones committed."""
        self._mine.add(recorded.run_id)
        tape = recorded.tape(writer=_Writer(self, recorded.run_id, recorded.agent, recorded.inputs))
        tape.run_id = recorded.run_id
        return tape

    async def recover(self, rt: Any, *, agents: Iterable[Any]) -> list[RunResult[Any]]:
        """``rt.recover()``'s work (:mod:`agentactors.journal.recovery`)."""
        return await recover(self, rt, agents=agents)

    async def commit(self, run_id: str, agent: str | None, inputs: tuple[Message, ...], commit: Commit) -> None:
        """Apply ``commit`` for ``run_id`` in one transaction (a :class:`~agentactors.loop.tape.Commit`)."""
        await self._call(_apply, run_id, agent, inputs, commit)
        if commit.end is not None:
            self._mine.discard(run_id)

    # -- reading -----------------------------------------------------------------------------------

    async def load_run(self, run_id: str) -> RecordedRun:
        """The run ``run_id`` as committed.  :raises RunNotRecordedError: the journal has no such run."""
        run = await self._call(_load, run_id)
        if run is None:
            raise RunNotRecordedError(f"the journal {self.path!r} holds no run {run_id!r}")
        return run

    async def unfinished(self) -> list[RecordedRun]:
        """The runs nothing said ended — a crashed process's — except those running through this object."""
        ids = await self._call(_running)
        runs = []
        for run_id in ids:
            if run_id in self._mine:
                continue
            run = await self._call(_load, run_id)
            if run is not None:
                runs.append(run)
        return runs

    async def aclose(self) -> None:
        """Close the connection (the next use opens a new one).  Idempotent."""
        await self._call(_close)

    # -- threads ----------------------------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        limiter = self._limiter.get(None)
        if limiter is None:
            limiter = anyio.CapacityLimiter(1)
            self._limiter.set(limiter)
        return await anyio.to_thread.run_sync(self._locked, fn, args, limiter=limiter)

    def _locked(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        with self._lock:
            if fn is _close:
                conn, self._conn = self._conn, None
                if conn is not None:
                    conn.close()
                return fn(None)
            conn = self._conn
            if conn is None:
                conn = self._conn = _connect(self.path, self.busy_timeout, self.synchronous)
            return fn(conn, *args)


class _Writer:
    """One run's :class:`~agentactors.loop.tape.StepWriter` into a :class:`SqliteJournal`."""

    __slots__ = ("agent", "inputs", "journal", "run_id")

    def __init__(self, journal: SqliteJournal, run_id: str, agent: str | None, inputs: tuple[Message, ...]) -> None:
        self.journal = journal
        self.run_id = run_id
        self.agent = agent
        self.inputs = inputs

    async def commit(self, commit: Commit) -> None:
        await self.journal.commit(self.run_id, self.agent, self.inputs, commit)


# --- what runs in the worker thread --------------------------------------------------------------------


def _connect(path: str, busy_timeout: float, synchronous: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("BEGIN IMMEDIATE")
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def _apply(conn: sqlite3.Connection, run_id: str, agent: str | None, inputs: tuple[Message, ...], c: Commit) -> None:
    # Everything encoded before the transaction: an unstorable value never takes the write lock.
    begin = json.dumps(messages_to_json(inputs), ensure_ascii=False) if c.begin else None
    responses = [(n, json.dumps(response_to_json(r), ensure_ascii=False)) for n, r in c.responses]
    results = None
    if c.results is not None:
        results = (c.results[0], json.dumps([result_to_json(r) for r in c.results[1]], ensure_ascii=False))
    content = c.result.content if c.result is not None else None
    conn.execute("BEGIN IMMEDIATE")
    try:
        if begin is not None:
            conn.execute(
                f"INSERT INTO {_RUNS} (run_id, agent, inputs, status, started) VALUES (?, ?, ?, 'running', ?)"
                " ON CONFLICT (run_id) DO UPDATE SET status = 'running', ended = NULL",
                (run_id, agent, begin, time.time()),
            )
        for n, doc in responses:
            conn.execute(
                f"INSERT INTO {_STEPS} (run_id, step, response) VALUES (?, ?, ?)"
                " ON CONFLICT (run_id, step) DO UPDATE SET response = excluded.response",
                (run_id, n, doc),
            )
        if results is not None:
            conn.execute(
                f"INSERT INTO {_STEPS} (run_id, step, results) VALUES (?, ?, ?)"
                " ON CONFLICT (run_id, step) DO UPDATE SET results = excluded.results",
                (run_id, results[0], results[1]),
            )
        if c.end is not None:
            conn.execute(
                f"UPDATE {_RUNS} SET status = ?, content = ?, ended = ? WHERE run_id = ?",
                (c.end, content, time.time(), run_id),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _running(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(f"SELECT run_id FROM {_RUNS} WHERE status = 'running' ORDER BY started").fetchall()
    return [str(r[0]) for r in rows]


def _load(conn: sqlite3.Connection, run_id: str) -> RecordedRun | None:
    row = conn.execute(f"SELECT agent, inputs, status, content FROM {_RUNS} WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    steps = []
    rows = conn.execute(f"SELECT step, response, results FROM {_STEPS} WHERE run_id = ? ORDER BY step", (run_id,))
    for number, response, results in rows:
        if response is None:  # results without their response: nothing to serve from here on
            break
        steps.append(
            RecordedStep(
                int(number),
                response_from_json(json.loads(response)),
                None if results is None else tuple(result_from_json(d) for d in json.loads(results)),
            )
        )
    inputs = messages_from_json(json.loads(row[1]))
    return RecordedRun(run_id, row[0], inputs, tuple(steps), str(row[2]), content=row[3])


def _close(_: None) -> None:
    return None
