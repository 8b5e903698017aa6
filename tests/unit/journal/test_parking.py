"""JournalStore.park / parked / unpark: a durable map key -> JSON text beside the runs, on SQLite and PostgreSQL.

What a batch provider relies on to find a run's pending batch after a restart: a value parked by one journal
object is read by another on the same database; bad values are refused before anything is written; a damaged
row is a typed error naming its key.  Real files, threads and a real server: the real clock.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import assert_type

import pytest

from agentactors._json import MAX_DOCUMENT_DEPTH
from agentactors.journal import JournalFormatError, JournalStore, SqliteJournal
from tests.support.journals import Make
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio





async def test_a_parked_value_outlives_the_journal_object_that_parked_it(make: Make) -> None:
    batch = json.dumps({"provider": "openai", "batch_id": "batch_1", "runs": ["r1", "r2"], "text": "ünïcode"})
    async with make() as first:  # typed: JournalStore has __aenter__ (the journal itself) and __aexit__
        assert_type(first, JournalStore)
        assert isinstance(first, JournalStore)
        assert await first.parked("batch:r1") is None
        await first.park("batch:r1", batch)
        assert await first.parked("batch:r1") == batch
    async with make() as second:  # a restart: a new connection reads what the first committed
        assert await second.parked("batch:r1") == batch
        await second.park("batch:r1", '{"batch_id": "batch_2"}')  # replaces
        assert await second.parked("batch:r1") == '{"batch_id": "batch_2"}'
        await second.unpark("batch:r1")
        await second.unpark("batch:r1")  # nothing parked: nothing happens
        assert await second.parked("batch:r1") is None
    async with make() as third:
        assert await third.parked("batch:r1") is None


async def test_keys_are_separate(make: Make) -> None:
    async with make() as journal:
        await journal.park("a", "1")
        await journal.park("b", "[2]")
        await journal.unpark("a")
        assert (await journal.parked("a"), await journal.parked("b")) == (None, "[2]")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("{not json", "is not JSON"),
        ("[" * (MAX_DOCUMENT_DEPTH + 1) + "]" * (MAX_DOCUMENT_DEPTH + 1), "nests deeper than"),
        ("1" * 5000, "more than 4300 digits|does not convert"),
    ],
    ids=["not-json", "too-deep", "long-integer"],
)
async def test_a_value_past_the_json_policy_is_refused_and_nothing_is_written(make: Make, value: str, why: str) -> None:
    async with make() as journal:
        await journal.park("k", '"kept"')
        with pytest.raises(JournalFormatError, match=why) as caught:
            await journal.park("k", value)
        assert isinstance(caught.value, ValueError) and "'k'" in str(caught.value)
        assert await journal.parked("k") == '"kept"'


async def test_the_deepest_value_the_policy_allows_is_kept(make: Make) -> None:
    deep = "[" * MAX_DOCUMENT_DEPTH + "]" * MAX_DOCUMENT_DEPTH
    async with make() as journal:
        await journal.park("deep", deep)
    async with make() as journal:
        assert await journal.parked("deep") == deep


async def test_bad_keys_and_values_are_typed_errors(make: Make) -> None:
    async with make() as journal:
        with pytest.raises(ValueError, match="parking key"):
            await journal.park("", "1")
        with pytest.raises(ValueError, match="parking key"):
            await journal.parked("x" * 1025)
        with pytest.raises(TypeError, match="parking key is a str"):
            await journal.unpark(3)  # type: ignore[arg-type]  # on purpose
        with pytest.raises(TypeError, match="JSON text"):
            await journal.park("k", {"a": 1})  # type: ignore[arg-type]  # on purpose


async def test_a_damaged_stored_value_is_a_typed_error_naming_its_key(
    make: Make, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with make() as journal:
        await journal.park("k", "[1]")
        damaged = "[" * (MAX_DOCUMENT_DEPTH + 5)
        if isinstance(journal, SqliteJournal):
            with closing(sqlite3.connect(tmp_path / "runs.db", isolation_level=None)) as conn:  # (autocommit)
                conn.execute("UPDATE agentactors_parked SET value = ? WHERE key = 'k'", (damaged,))
        else:
            import psycopg

            with psycopg.connect(request.getfixturevalue("postgres_dsn")) as conn:
                conn.execute("UPDATE agentactors_parked SET value = %s WHERE key = 'k'", (damaged,))
        with pytest.raises(JournalFormatError, match=r"'k'.*as stored"):
            await journal.parked("k")
