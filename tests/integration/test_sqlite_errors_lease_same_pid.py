"""A run leased to an owner id naming this process is held only while that journal object exists.

A lease's holder on this machine is known gone when its process is (``agentactors.journal._lease``): a crash and a
restart recover at once instead of waiting out the lease.  An owner id naming *this* process's PID was taken for a
journal object of this process, alive as long as we are — but a container restarted is a new process with the
same host name, very often the same PID (1, or 7 under an init) and the same PID namespace number (the kernel
gives the lowest free number out again): its crashed predecessor's runs looked held by a live journal here, and
``recover()`` at start found nothing until their leases expired (30 s by default) — a service recovering only at
start never recovered them.  Now an owner id of this PID is a live holder only while a journal object of this
process has it (the owner's nonce is per object); any other — an earlier process that had this PID, or a journal
object collected since — is gone.  Another live journal object of this process still holds its runs, closed or
not (it may still be running one: its commits renew the lease).

Real SQLite files and threads, and real processes as PID 1 of new PID namespaces (``unshare``, as root; skipped
elsewhere): the real clock.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from agentactors import SqliteJournal
from agentactors.loop.tape import Commit
from agentactors.messages import Message

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.timeout(60),
    pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="a PID namespace to compare: Linux"),
]

INPUTS = (Message.user("go"),)


def _lease_to(path: Path, run_id: str, owner: str) -> None:
    """``run_id`` leased to ``owner`` for ten minutes more, as its holder's last renewal left it."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        until = time.time() + 600
        conn.execute("UPDATE agentactors_runs SET owner = ?, lease_until = ? WHERE run_id = ?", (owner, until, run_id))
    finally:
        conn.close()


async def test_a_run_left_by_an_earlier_process_with_this_pid_is_recovered_at_once(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with anyio.fail_after(30):
        async with SqliteJournal(path) as journal:
            await journal.commit("r1", "a", INPUTS, Commit(begin=True))
            # What a crashed process of the same host, PID namespace and PID left (a container restarted): its
            # journal object's owner id, another nonce than any journal object here.
            host_ns_pid = journal.owner.rsplit("|", 1)[0]
            _lease_to(path, "r1", f"{host_ns_pid}|0123456789ab")
            assert int(host_ns_pid.rsplit("|", 1)[1]) == os.getpid()
            assert [r.run_id for r in await journal.unfinished()] == ["r1"]
            claimed = await journal.claim("r1")
            assert claimed is not None and claimed.run_id == "r1"


async def test_a_live_journal_of_this_process_keeps_its_runs_closed_or_not(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with anyio.fail_after(30):
        holder = SqliteJournal(path)
        await holder.commit("r1", "a", INPUTS, Commit(begin=True))
        async with SqliteJournal(path) as other:
            assert await other.unfinished() == [] and await other.claim("r1") is None
            await holder.aclose()  # closed, but alive: a run of its may still be running (its commits renew)
            assert await other.unfinished() == [] and await other.claim("r1") is None
            del holder
            gc.collect()  # collected: nothing can run through it any more
            assert [r.run_id for r in await other.unfinished()] == ["r1"]


# -- a real restart: two processes in turn as PID 1 of a new PID namespace (what a container restarted is) --------

_CRASHES = """
import os, sys, anyio
from agentactors import SqliteJournal
from agentactors.loop.tape import Commit
from agentactors.messages import Message

async def main(path):
    journal = SqliteJournal(path)
    await journal.commit("r1", "a", (Message.user("go"),), Commit(begin=True))
    print(journal.owner, flush=True)
    os._exit(1)  # a crash: nothing closed, the lease left as it was (PID 1 ignores its own SIGKILL)

anyio.run(main, sys.argv[1])
"""

_RESTARTS = """
import sys, anyio
from agentactors import SqliteJournal

async def main(path):
    async with SqliteJournal(path) as journal:
        print(journal.owner, " ".join(r.run_id for r in await journal.unfinished()), flush=True)

anyio.run(main, sys.argv[1])
"""


def _as_pid_1(script: str, path: Path) -> str:
    """``script`` run as PID 1 of a new PID namespace (``unshare``, root): its output."""
    import subprocess
    import sys

    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script, str(path)],
        capture_output=True, text=True, timeout=60, check=False, cwd=Path(__file__).resolve().parents[2],
    )
    if done.returncode not in (0, 1) or not done.stdout.strip():
        pytest.skip(f"no new PID namespace here ({done.returncode}: {done.stderr.strip()[-200:]})")
    return done.stdout.strip()


@pytest.mark.skipif(os.geteuid() != 0, reason="unshare --pid needs root")
async def test_a_container_restarted_with_the_same_pid_recovers_its_crashed_runs_at_start(tmp_path: Path) -> None:
    import shutil

    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    path = tmp_path / "runs.db"
    await anyio.sleep(1.0)  # a namespace of a test before freed: the crash and the restarts get the same lowest one
    crashed = (await anyio.to_thread.run_sync(_as_pid_1, _CRASHES, path)).split("|")
    seen: list[str] = []
    for _ in range(10):  # the kernel hands a freed PID namespace number out again, once it is freed
        await anyio.sleep(0.5)
        owner, _sep, found = (await anyio.to_thread.run_sync(_as_pid_1, _RESTARTS, path)).partition(" ")
        seen.append(owner)
        if owner.split("|")[:3] == crashed[:3]:
            break
    else:
        pytest.skip(f"this kernel did not give the PID namespace's number out again ({crashed}, {seen})")
    assert crashed[2] == "1"  # both were PID 1, same host, same namespace number: only the nonce differs
    assert found == "r1"  # recovered at start, not after the crashed one's lease expired
