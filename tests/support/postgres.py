"""A real PostgreSQL server for the tests: initdb into a temporary directory, started on 127.0.0.1, stopped at the end.

``postgres_server`` (session-scoped: one server per test process) finds the binaries — ``initdb`` on ``PATH``, then
Debian's ``/usr/lib/postgresql/<version>/bin`` — runs ``initdb`` into a new directory, and starts ``postgres`` on
127.0.0.1 on a free port (and a unix socket in that directory) with password authentication over TCP.  Each test
gets a database of its own from :meth:`PostgresServer.new_database` (``CREATE DATABASE``: a copy of ``template1``,
milliseconds).

As root (``make test`` on a CI machine) ``initdb`` refuses to run: the server then runs as the ``postgres`` user
(Debian's package makes it) or ``nobody``, through ``runuser``, in a directory handed to that user.

Missing binaries skip with the command that installs them — and fail under ``CI=true`` (``make test`` installs
them: the Makefile's ``postgres`` target).  A server that is there but does not start always fails, with its log.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.support.required import missing

POSTGRES_INSTALL = "apt-get update && apt-get install -y postgresql (or `make postgres` as root)"
USER = "postgres"
PASSWORD = "s3cret-pw-for-tests"


def find_bin() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or ``None``."""
    found = shutil.which("initdb")
    if found is not None:
        return Path(found).parent
    candidates = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    candidates.sort(key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0, reverse=True)
    return Path(candidates[0]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _run_as() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that runs a program as a non-root user (initdb refuses root), and that user."""
    if os.geteuid() != 0:
        return [], None
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        return ["runuser", "-u", name, "--"], user
    pytest.fail("running as root, and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL as")


# The watchdog (see start()): it waits on its stdin, a pipe only the test process holds the other end of.  The
# test process writes "done" once it stopped the server itself; a pipe closed without it means the test process
# died without its teardown (a CI timeout, kill -9): the watchdog then stops the server and removes its directory.
_WATCHDOG = """
import shutil, subprocess, sys
if sys.stdin.readline() != "done\\n":
    subprocess.run(sys.argv[2:], capture_output=True, timeout=60)
    shutil.rmtree(sys.argv[1], ignore_errors=True)
"""


@attrs.define
class PostgresServer:
    """A running server: ``dsn(database)`` to reach it, ``new_database()`` for a test's own."""

    directory: Path
    bin: Path
    port: int
    prefix: list[str]
    watchdog: subprocess.Popen[bytes] | None = None

    @property
    def sockets(self) -> Path:
        return self.directory / "sockets"

    def dsn(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A new empty database's DSN (its name is unique in the server).

        ``STRATEGY = FILE_COPY`` (PostgreSQL 15 and later; earlier ones copy files anyway): the default of 15,
        ``WAL_LOG``, also writes the whole template (~7 MB) to the WAL, for every test; with ``fsync`` off
        (``-F``) the copy's checkpoints cost next to nothing."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            strategy = " STRATEGY = FILE_COPY" if conn.info.server_version >= 150000 else ""
            conn.execute(f'CREATE DATABASE "{name}"{strategy}')
        return self.dsn(name)

    def drop_database(self, dsn: str) -> None:
        """Drop the database of ``dsn`` (made by :meth:`new_database`), its connections closed first.

        Best effort: a test may leave the server unreachable; the session's end removes everything anyway."""
        import psycopg

        name = dsn.rpartition("/")[2]
        try:
            with psycopg.connect(self.dsn(), autocommit=True, connect_timeout=10) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except psycopg.Error:
            pass

    def stop_command(self) -> list[str]:
        return [*self.prefix, str(self.bin / "pg_ctl"), "stop", "-D", str(self.directory / "data"), "-m", "immediate"]

    def stop(self) -> None:
        subprocess.run(self.stop_command(), capture_output=True, check=False, timeout=60)
        watchdog, self.watchdog = self.watchdog, None
        if watchdog is not None and watchdog.stdin is not None:
            try:
                watchdog.stdin.write(b"done\n")
                watchdog.stdin.close()
            except OSError:  # it is gone already: nothing to tell it
                pass
            watchdog.wait(30)

    def watch(self) -> None:
        """Start the watchdog that stops this server if the test process dies without :meth:`stop` (``_WATCHDOG``).

        In a session of its own, so that a Ctrl-C to the test process's group does not end it before the teardown
        (which then stops the server and tells it so)."""
        self.watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(self.directory), *self.stop_command()],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )


def start(directory: Path) -> PostgresServer:
    """initdb into ``directory`` and start the server (see the module docstring).  Fails the test if it cannot."""
    bin_dir = find_bin()
    if bin_dir is None:
        missing(f"the PostgreSQL tests need initdb, pg_ctl and postgres (not found on PATH): {POSTGRES_INSTALL}")
    prefix, user = _run_as()
    data, sockets, log = directory / "data", directory / "sockets", directory / "server.log"
    sockets.mkdir()
    pwfile = directory / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if user is not None:
        for path in (directory, sockets, pwfile):
            os.chown(path, user.pw_uid, user.pw_gid)
    init = subprocess.run(
        [*prefix, str(bin_dir / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={pwfile}",
         "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"],
        capture_output=True, text=True, check=False, timeout=180,
    )
    if init.returncode != 0:
        pytest.fail(f"initdb failed ({bin_dir}): {init.stderr or init.stdout}")
    for _ in range(5):  # a free port may be taken by someone else before the server binds it: try another
        port = _free_port()
        options = f"-h 127.0.0.1 -p {port} -k {sockets} -F -c max_connections=200"
        started = subprocess.run(
            [*prefix, str(bin_dir / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(data), "-l", str(log),
             "-o", options],
            capture_output=True, text=True, check=False, timeout=120,
        )
        if started.returncode == 0:
            server = PostgresServer(directory, bin_dir, port, prefix)
            server.watch()
            return server
    text = log.read_text() if log.exists() else ""
    pytest.fail(f"PostgreSQL did not start ({bin_dir}): {started.stderr or started.stdout}\n{text[-3000:]}")


@attrs.define
class _ProcessServer:
    """The test process's one server: started by the first module that asks, stopped by the first teardown.

    pytest makes a fixture of its own (a ``FixtureDef``) in every module that imports ``postgres_server``, and
    "session-scoped" holds per fixture: each of the ~20 files that import it started a server of its own (initdb
    and a start, about a second on two cores) and kept it to the session's end, where a worker then stopped them
    one after another (10-15 s, its last thing).  Every one of those fixtures is torn down at the session's end,
    so the first teardown stops the shared server when no test needs it any more; the others find it stopped."""

    server: PostgresServer | None = None
    directory: Path | None = None

    def get(self) -> PostgresServer:
        if self.server is None:
            # Under /tmp itself, not pytest's tmp_path (root-only parents): the server's user must reach it.
            self.directory = Path(tempfile.mkdtemp(prefix="agentactors-pg-"))
            try:
                self.server = start(self.directory)
            except BaseException:  # a skip or failure: the next module tries again, as it would on its own
                self.close()
                raise
        return self.server

    def close(self) -> None:
        server, self.server = self.server, None
        directory, self.directory = self.directory, None
        if server is not None:
            server.stop()
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


_PROCESS_SERVER = _ProcessServer()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One server for the test process (its tests make their own databases), stopped and removed at the end."""
    try:
        yield _PROCESS_SERVER.get()
    finally:
        _PROCESS_SERVER.close()


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A new database of the session's server for this test: its DSN (with the password); dropped after it.

    Dropped, not left to the session's end: a test process makes a few hundred (~7 MB each), and removing a
    gigabyte of them at the end held a worker for tens of seconds on a busy disk, the last thing it did."""
    dsn = postgres_server.new_database()
    yield dsn
    postgres_server.drop_database(dsn)


def drop_every_other_connection(dsn: str) -> int:
    """Terminate every backend of the test's database but this one, and wait until they are gone (each has then
    sent its client the goodbye and closed the socket, as a restart does); how many were."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        pids = [
            pid
            for (pid,) in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ]
        conn.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))
        for _ in range(500):
            if not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)).fetchall():
                break
            time.sleep(0.01)
        else:
            raise AssertionError(f"backends {pids} outlived pg_terminate_backend for 5 s")
    return len(pids)
