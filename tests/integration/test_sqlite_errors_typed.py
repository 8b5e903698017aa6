"""What a SQLite session store or journal raises when its database fails a call: a typed error naming the path.

Before, a database another process held locked past ``busy_timeout`` — before the first use, or mid-run —, a
full disk, a read-only file or a damaged one raised sqlite3's own ``OperationalError`` / ``DatabaseError``,
naming no path (with several stores in a process, nobody could tell which) and outside the library's tree.  Now
a store raises :class:`~agentactors.sessions.sqlite.SqliteStoreError` (a ``SessionError``) and a journal
:class:`~agentactors.journal.sqlite.SqliteJournalError` (a ``JournalError``): each names the path and SQLite's
reason (``sqlite_errorname`` kept, sqlite3's error its cause), and each is still a ``sqlite3.OperationalError``,
so what caught that before catches it still.  Nothing committed before is lost, and the store or journal still
closes — and works again once the cause is gone.  (A path SQLite cannot open at all — a missing directory, a
directory, a file that is not a database — is a ``ConnectionError``: ``tests/unit/journal/test_sqlite_bad_paths.py``.)

Real files, real worker threads, real processes holding the locks (and a real file-size limit for the full disk):
the real clock, with generous bounds.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from agentactors import Agent, Runtime, SqliteJournal
from agentactors.errors import SessionError
from agentactors.journal import JournalError
from agentactors.journal.sqlite import SqliteJournalError
from agentactors.loop.tape import Commit
from agentactors.messages import Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import SqliteStore
from agentactors.sessions.sqlite import SqliteStoreError
from agentactors.sessions.store import SessionRecord

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

INPUTS = (Message.user("go"),)

_HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS holder_t (x)")
    conn.execute("BEGIN " + sys.argv[2])
    conn.execute("INSERT INTO holder_t VALUES (1)")
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    conn.execute("ROLLBACK")
    """
)


@contextmanager
def held(path: Path | str, how: str = "EXCLUSIVE") -> Iterator[None]:
    """Another process holding ``path``'s write lock (``BEGIN EXCLUSIVE`` / ``IMMEDIATE``) for the block."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), how], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    with proc:  # its pipes closed on the way out
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
            yield
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)


def _record(key: str, text: str = "hello") -> SessionRecord:
    return SessionRecord(key, (Message.user(text),), 0)


def _assert_typed(exc: BaseException, cls: type[BaseException], path: Path | str, name: str) -> None:
    assert type(exc) is cls
    assert isinstance(exc, sqlite3.OperationalError)  # what caught sqlite3's error before catches this one
    assert repr(os.fspath(path)) in str(exc), str(exc)
    assert str(getattr(exc, "sqlite_errorname", "")).startswith(name), getattr(exc, "sqlite_errorname", None)
    assert isinstance(exc.__cause__, sqlite3.DatabaseError)
    assert getattr(exc, "path", None) == os.fspath(path)


# -- locked by another process before the first use --------------------------------------------------------------


async def test_a_store_locked_before_its_first_use_is_a_typed_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with anyio.fail_after(60):
        store = SqliteStore(path, busy_timeout=0.2)
        with held(path):  # a new file in rollback mode, locked exclusively: nothing can even be read
            with pytest.raises(SessionError) as caught:
                await store.load("s1")
        _assert_typed(caught.value, SqliteStoreError, path, "SQLITE_BUSY")
        assert "locked" in str(caught.value) and "busy_timeout" in str(caught.value)
        # The lock gone, the same store works: the failed open left nothing half-made.
        assert await store.load("s1") is None
        committed = await store.commit(_record("s1"), expected_version=None)
        assert committed.version == 1
        await store.aclose()


async def test_a_journal_locked_before_its_first_use_is_a_typed_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with anyio.fail_after(60):
        journal = SqliteJournal(path, busy_timeout=0.2)
        with held(path):
            with pytest.raises(JournalError) as caught:
                await journal.unfinished()
            _assert_typed(caught.value, SqliteJournalError, path, "SQLITE_BUSY")
            # A run in a runtime whose journal cannot begin it raises the same, before its first model call.
            async with Runtime(journal=journal):
                with pytest.raises(SqliteJournalError, match="locked"):
                    await Agent(ScriptedProvider(["never"]), name="a").run("go")
        assert await journal.unfinished() == []
        await journal.commit("r1", "a", INPUTS, Commit(begin=True))
        assert (await journal.load_run("r1")).status == "running"
        await journal.aclose()


# -- busy_timeout past mid-use: what was committed stays ----------------------------------------------------------


async def test_a_store_commit_behind_another_process_lock_is_typed_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with anyio.fail_after(60):
        async with SqliteStore(path, busy_timeout=0.2) as store:
            first = await store.commit(_record("s1", "one"), expected_version=None)
            second = SessionRecord("s1", (*first.messages, Message.user("two")), 1, kept=1, origin=first.origin)
            with held(path, "IMMEDIATE"):  # WAL: readers go on, a writer waits busy_timeout
                with pytest.raises(SqliteStoreError) as caught:
                    await store.commit(second, expected_version=1)
                _assert_typed(caught.value, SqliteStoreError, path, "SQLITE_BUSY")
                with pytest.raises(SqliteStoreError, match="locked"):
                    await store.delete("s1")
                loaded = await store.load("s1")
                assert loaded is not None and loaded.version == 1
                assert [m.content for m in loaded.messages] == ["one"]
            again = await store.commit(second, expected_version=1)
            assert again.version == 2


async def test_a_journal_commit_behind_another_process_lock_is_typed_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with anyio.fail_after(60):
        async with SqliteJournal(path, busy_timeout=0.2) as journal:
            await journal.commit("r1", "a", INPUTS, Commit(begin=True))
            await journal.park("k", '"kept"')
            with held(path, "IMMEDIATE"):
                with pytest.raises(SqliteJournalError) as caught:  # a commit answered as a value by its batch
                    await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
                _assert_typed(caught.value, SqliteJournalError, path, "SQLITE_BUSY")
                with pytest.raises(SqliteJournalError, match="locked"):
                    await journal.park("k", '"lost"')
                with pytest.raises(SqliteJournalError, match="locked"):
                    await journal.claim("r1")
                assert (await journal.load_run("r1")).status == "running"  # WAL: readers go on
                assert await journal.parked("k") == '"kept"'
            await journal.commit("r1", "a", INPUTS, Commit(end="cancelled"))
            assert (await journal.load_run("r1")).status == "cancelled"


# -- a read-only file, a damaged file ------------------------------------------------------------------------------


async def test_a_read_only_database_is_a_typed_error_and_what_is_there_stays(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with SqliteStore(path) as store:
        await store.commit(_record("s1"), expected_version=None)
    uri = f"file:{path}?mode=ro"  # the file opened read-only (permissions do not bind root, who runs CI)
    with anyio.fail_after(60):
        async with SqliteStore(uri) as store:
            loaded = await store.load("s1")
            assert loaded is not None and loaded.version == 1
            with pytest.raises(SqliteStoreError) as caught:
                await store.commit(_record("s2"), expected_version=None)
            _assert_typed(caught.value, SqliteStoreError, uri, "SQLITE_READONLY")
            assert "read-only" in str(caught.value)
        async with SqliteJournal(uri) as journal:
            with pytest.raises(SqliteJournalError) as caught_j:
                await journal.unfinished()
            _assert_typed(caught_j.value, SqliteJournalError, uri, "SQLITE_READONLY")
    async with SqliteStore(path) as store:
        loaded = await store.load("s1")
        assert loaded is not None and [m.content for m in loaded.messages] == ["hello"]


def _damage(path: Path) -> None:
    """Garbage over every page but the first (the header and the schema stay: SQLite opens it, then reads junk)."""
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 4096):
        data[offset : offset + 512] = bytes((offset // 4096 * 37 + i * 11) % 256 for i in range(512))
    path.write_bytes(bytes(data))


async def test_a_damaged_store_file_is_a_typed_error_and_the_store_closes(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with SqliteStore(path) as store:
        for n in range(20):
            await store.commit(_record(f"s{n}", "x" * 3000), expected_version=None)
    _damage(path)
    with anyio.fail_after(60):
        store = SqliteStore(path)
        with pytest.raises(SqliteStoreError) as caught:
            await store.load("s7")
        _assert_typed(caught.value, SqliteStoreError, path, "SQLITE_CORRUPT")
        assert "damaged" in str(caught.value)
        await store.aclose()
        await store.aclose()  # idempotent


# -- a full disk: a child process under a file-size limit ---------------------------------------------------------

_FULL = textwrap.dedent(
    """
    import json, os, resource, signal, sqlite3, sys
    import anyio
    from agentactors import SqliteJournal
    from agentactors.loop.tape import Commit
    from agentactors.messages import Message
    from agentactors.sessions import SqliteStore
    from agentactors.sessions.store import SessionRecord

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing us
    path, backend = sys.argv[1], sys.argv[2]
    out = {}

    def limit(size):
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))

    def failure(exc):
        return {"type": type(exc).__name__, "text": str(exc), "name": getattr(exc, "sqlite_errorname", None),
                "path": getattr(exc, "path", None), "operational": isinstance(exc, sqlite3.OperationalError)}

    async def main():
        big = "x" * 2_000_000
        async with SqliteStore(path + ".sessions") as store:
            await store.commit(SessionRecord("s1", (Message.user("kept"),), 0), expected_version=None)
            limit(200_000)
            try:
                await store.commit(SessionRecord("s2", (Message.user(big),), 0), expected_version=None)
            except Exception as exc:
                out["store"] = failure(exc)
            limit(resource.RLIM_INFINITY)
            loaded = await store.load("s1")
            out["store_kept"] = [m.content for m in loaded.messages]
            out["store_after"] = (await store.commit(
                SessionRecord("s3", (Message.user("after"),), 0), expected_version=None)).version
        async with SqliteJournal(path + ".runs") as journal:
            await journal.commit("r1", "a", (Message.user("go"),), Commit(begin=True))
            limit(200_000)
            try:
                await journal.commit("r2", "a", (Message.user(big),), Commit(begin=True))
            except Exception as exc:
                out["journal"] = failure(exc)
            limit(resource.RLIM_INFINITY)
            out["journal_kept"] = (await journal.load_run("r1")).status
        print(json.dumps(out))

    anyio.run(main, backend=backend)
    """
)


async def test_a_full_disk_is_a_typed_error_and_loses_nothing(tmp_path: Path, anyio_backend_name: str) -> None:
    path = str(tmp_path / "full")
    result = await anyio.run_process([sys.executable, "-c", _FULL, path, anyio_backend_name], check=False)
    assert result.returncode == 0, result.stderr.decode()
    out = json.loads(result.stdout)
    for who, cls, suffix in (("store", "SqliteStoreError", ".sessions"), ("journal", "SqliteJournalError", ".runs")):
        failed = out[who]
        assert failed["type"] == cls and failed["operational"], failed
        assert failed["name"].startswith(("SQLITE_FULL", "SQLITE_IOERR")), failed
        assert failed["path"] == path + suffix and repr(path + suffix) in failed["text"], failed
    assert out["store_kept"] == ["kept"] and out["store_after"] == 1
    assert out["journal_kept"] == "running"


# -- the typed error itself ----------------------------------------------------------------------------------------


def test_the_typed_errors_pickle_with_their_path_and_reason() -> None:
    import pickle

    for cls in (SqliteStoreError, SqliteJournalError):
        err = cls("the SQLite database '/x.db' failed: database is locked", path="/x.db", errorname="SQLITE_BUSY")
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is cls and str(back) == str(err)
        assert back.path == "/x.db" and back.sqlite_errorname == "SQLITE_BUSY"


async def test_a_batch_commit_that_the_database_refuses_is_typed_alone_and_the_others_land(tmp_path: Path) -> None:
    from agentactors.journal._rows import encode
    from agentactors.journal._sql import Item

    path = tmp_path / "runs.db"
    async with SqliteJournal(path) as journal:
        await journal.park("k", "1")  # the tables made; now a trigger refuses one run's begin (what SQLite says)
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON agentactors_runs WHEN NEW.run_id = 'bad'"
            " BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END"
        )
        conn.close()
        items: list[Item] = [(r, "a", encode(r, INPUTS, Commit(begin=True))) for r in ("good", "bad", "also")]
        with anyio.fail_after(30):
            outcomes = await journal._apply_many(items)  # one transaction, a savepoint a commit
        good, bad, also = outcomes
        assert good is None and also is None
        assert isinstance(bad, SqliteJournalError) and "refused by a trigger" in str(bad)
        _assert_typed(bad, SqliteJournalError, path, "SQLITE_CONSTRAINT")
        assert (await journal.load_run("good")).status == "running"
        assert (await journal.load_run("also")).status == "running"


@pytest.mark.anyio
@pytest.mark.parametrize("key", ["0011223344556677", "hunter2pw"])
async def test_a_uri_key_never_travels_in_the_error_or_the_repr(tmp_path: Path, key: str) -> None:
    """A ``file:`` URI's query may hold an encrypted build's key (``?key=``): the typed error names the database
    with it masked — in its text, its ``path`` and pickled (Ray ships errors) — and so do the reprs; SQLite's own
    parameters (``mode=ro``) stay readable."""
    import pickle

    db = tmp_path / "s.db"
    sqlite3.connect(db).close()
    uri = f"file:{db}?mode=ro&key={key}"
    store = SqliteStore(uri)
    journal = SqliteJournal(uri)
    with pytest.raises(sqlite3.Error) as caught:
        await store.load("k")  # read-only: its tables cannot be made
    error = caught.value
    shipped = pickle.loads(pickle.dumps(error))
    for shown in (str(error), repr(error), str(getattr(error, "path", "")), str(getattr(shipped, "path", "")),
                  repr(store), repr(journal)):
        assert key not in shown, shown
    assert "mode=ro" in str(error) and "key=[REDACTED]" in str(error), str(error)
    await store.aclose()
