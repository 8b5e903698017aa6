"""The tests' PostgreSQL server does not outlive a test process that is killed (tests/support/postgres.py).

A pytest run stopped from outside — a CI job's timeout, ``kill -9``, an OOM kill — runs no fixture teardown: the
server it started kept running in the background, holding its memory and a temporary directory, one per xdist
worker and run.  Its watchdog, a child tied to the test process by a pipe, stops and removes it when that pipe
closes without the word that the test process stopped it itself.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.postgres import find_bin

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import tempfile, time
from pathlib import Path
from tests.support.postgres import start
directory = Path(tempfile.mkdtemp(prefix="agentactors-pg-"))
server = start(directory)
print(server.port, directory, flush=True)
time.sleep(600)
"""


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def test_a_killed_test_process_leaves_no_server_behind() -> None:
    assert find_bin() is not None, "make test installs PostgreSQL (the Makefile's postgres target)"
    process = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port_text, directory_text = process.stdout.readline().split()
        port, directory = int(port_text), Path(directory_text)
        assert _listening(port) and directory.exists()
    finally:
        process.kill()  # as a CI timeout does: no teardown runs
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()
    deadline = time.monotonic() + 60
    while (_listening(port) or directory.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _listening(port), "the server outlived the test process that started it"
    assert not directory.exists(), "its directory was left behind"
