"""A PostgreSQL server of a test module's own, to freeze: every process of it stopped (``SIGSTOP``) and continued.

A stopped server is the one failure no server-side timeout ends: its kernel still accepts connections and
acknowledges every byte sent (keepalives included), and nothing ever answers.  What bounds a call then is the
client's own deadline (:mod:`agentactors._postgres`).  The server is the module's own, not the session's
(:mod:`tests.support.postgres`), so freezing it stops no other test; it is always continued on the way out.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.postgres import PostgresServer, start


def _pids(server: PostgresServer) -> list[int]:
    """The postmaster and all its children."""
    postmaster = int((server.directory / "data" / "postmaster.pid").read_text().split()[0])
    pids = [postmaster]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:  # the field after the state: its parent
            pids.append(int(entry))
    return pids


@contextmanager
def frozen(server: PostgresServer) -> Iterator[None]:
    """Every process of ``server`` stopped for the block, continued after it (whatever happened in it)."""
    pids = _pids(server)
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        yield
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


@contextmanager
def own_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the caller's own (to freeze, stop or kill), in a temporary directory; stopped and
    removed at the end."""
    directory = Path(tempfile.mkdtemp(prefix="agentactors-pg-"))
    server = None
    try:
        server = start(directory)
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def own_postgres_server() -> Iterator[PostgresServer]:
    """A server for this module alone (frozen by its tests), stopped and removed at the end."""
    with own_server() as server:
        yield server
