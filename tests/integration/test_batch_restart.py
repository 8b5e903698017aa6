"""A run waiting on a batch survives its process: SIGKILLed after submitting, recovered without a second submission.

Process 1 (a child, below) runs an agent through a BatchProvider in a runtime with a journal (SQLite, and
PostgreSQL); the FakeVendor keeps the batch in progress; once the request is parked in the journal (the
``batch.parked`` event, printed by the child), the child is killed with SIGKILL — no cleanup runs. Process 2
(this test) opens the same journal, ``rt.recover()`` re-runs the step, and the BatchProvider finds the parked
batch and polls it: the FakeVendor saw one submission, no single request, and the recovered run has the
batch's answer.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from agentactors import Agent, BatchProvider, OpenAIProvider, PostgresJournal, Runtime, SqliteJournal
from agentactors.journal import JournalStore
from agentactors.testing import FakeVendor
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-batch-restart-secret-4242"

CHILD = """
import sys
import anyio
from agentactors import Agent, BatchProvider, OpenAIProvider, PostgresJournal, Runtime, SqliteJournal


class Say:
    def record(self, event):
        if event.type == "batch.parked":
            print("parked", event.data["batch_id"], flush=True)


async def main(base_url, db):
    provider = BatchProvider(OpenAIProvider("gpt-4o-mini", api_key=sys.argv[3], base_url=base_url),
                             window=0.05, poll_every=0.05)
    journal = PostgresJournal(db) if db.startswith("postgresql://") else SqliteJournal(db)
    async with journal, Runtime(recorders=[Say()], journal=journal) as rt:
        await Agent(provider, name="batcher").run("What is the capital of Norway?", runtime=rt)
    print("finished: the batch should never have ended", flush=True)


anyio.run(main, sys.argv[1], sys.argv[2])
"""


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the journal is: a SQLite file, or a database of the test PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "journal.db")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


def open_journal(db: str) -> JournalStore:
    return PostgresJournal(db) if db.startswith("postgresql://") else SqliteJournal(db)


async def _parked_batch(child: Process) -> str:
    """The batch id the child printed once its request was parked (its first line)."""
    assert child.stdout is not None and child.stderr is not None
    seen = b""
    while b"\n" not in seen:
        try:
            seen += await child.stdout.receive()
        except anyio.EndOfStream:
            errors = b"".join([chunk async for chunk in child.stderr])
            raise AssertionError(f"the child ended before parking: {errors.decode()[-3000:]}") from None
    line = seen.decode().splitlines()[0]
    assert line.startswith("parked "), f"the child said {line!r}"
    return line.split()[1]


async def test_a_recovered_run_polls_its_parked_batch_instead_of_submitting_again(
    tmp_path: Path, db: str, anyio_backend: Any
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(polls=1_000_000)  # in progress for as long as the child lives
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        child = await anyio.open_process(
            [sys.executable, str(script), fv.openai_base_url, db, KEY], env=env, cwd=tmp_path,
        )
        async with child:
            try:
                with anyio.fail_after(60):
                    batch_id = await _parked_batch(child)
            finally:
                child.kill()  # SIGKILL: no cleanup runs in the child
                await child.wait()
        assert child.returncode == -signal.SIGKILL
        assert fv.batches.count == 1
        fv.batches.finish(batch_id)

        provider = BatchProvider(OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url=fv.openai_base_url),
                                 window=0.05, poll_every=0.05)
        events: list[Any] = []

        class Keep:
            def record(self, event: Any) -> None:
                events.append(event)

        async with open_journal(db) as journal, Runtime(recorders=[Keep()], journal=journal) as rt:
            with anyio.fail_after(30):
                (result,) = await rt.recover(agents=[Agent(provider, name="batcher")])
            assert result.error is None
            assert result.content == "Echo: What is the capital of Norway?"
            (resumed,) = [e for e in events if e.type == "batch.resumed"]
            assert await journal.parked(f"agentactors.batch/{resumed.data['key']}") is None  # answered: unparked

        assert fv.batches.count == 1, "the recovered run submitted its request again"
        assert fv.batches.single_requests == ()
        assert [e.data["batch_id"] for e in events if e.type == "batch.resumed"] == [batch_id]
        assert all(not r.key_leaks for r in fv.requests)



async def test_a_run_cancelled_on_purpose_removes_its_parked_request(db: str, anyio_backend: Any) -> None:
    events: list[Any] = []
    parked = anyio.Event()

    class Keep:
        def record(self, event: Any) -> None:
            events.append(event)
            if event.type == "batch.parked":
                parked.set()

    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(polls=1_000_000)
        provider = BatchProvider(OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url=fv.openai_base_url),
                                 window=0.05, poll_every=0.05)
        async with open_journal(db) as journal, Runtime(recorders=[Keep()], journal=journal) as rt:
            async with anyio.create_task_group() as tg:
                agent = Agent(provider, name="batcher").bind(rt)
                tg.start_soon(agent.run, "wait for me")
                with anyio.fail_after(30):
                    await parked.wait()
                (event,) = [e for e in events if e.type == "batch.parked"]
                key = f"agentactors.batch/{event.data['key']}"
                assert await journal.parked(key) is not None
                tg.cancel_scope.cancel()
            assert await journal.parked(key) is None  # a cancelled run is not recovered: nothing left parked
            assert await rt.recover(agents=[Agent(provider, name="batcher")]) == []
        assert fv.batches.count == 1
