"""The store port: the record, the protocol's shape, and what a store must do (checked on MemoryStore)."""

from __future__ import annotations

import attrs
import pytest

from agentactors.errors import SessionConflictError
from agentactors.messages import Message
from agentactors.sessions import MemoryStore, SessionRecord, SessionStore, SqliteStore
from agentactors.sessions.store import check_key, check_store, conflict_message

pytestmark = pytest.mark.anyio


def test_a_record_is_immutable_and_checked() -> None:
    record = SessionRecord("k", [Message.user("hi")])
    assert record.messages == (Message.user("hi"),) and record.version == 0 and record.paused is None
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.version = 2  # type: ignore[misc]
    with pytest.raises(ValueError, match="non-empty str"):
        SessionRecord("")
    with pytest.raises(ValueError, match="int >= 0"):
        SessionRecord("k", (), -1)
    with pytest.raises(ValueError, match="int >= 0"):
        SessionRecord("k", (), True)


def test_a_key_no_store_keeps_is_refused_typed() -> None:
    """A NUL (PostgreSQL's text refuses it) or a lone surrogate (not UTF-8): a ValueError, in every store alike."""
    for key in ("k", "a/b", "é☃𝄞", "\x01", "x" * 2048, "é" * 1024):
        assert check_key(key) == key
    with pytest.raises(TypeError, match="str"):
        check_key(b"k")  # type: ignore[arg-type]
    for bad, why in (("", "empty"), ("\x00", "NUL"), ("user:\x00", "NUL"), ("é\ud800", "UTF-8"),
                     ("x" * 2049, "at most 2048 bytes"), ("é" * 1025, "at most 2048 bytes")):
        with pytest.raises(ValueError, match=why):
            check_key(bad)
        with pytest.raises(ValueError, match=why):
            SessionRecord(bad)


def test_both_stores_are_session_stores(tmp_path: object) -> None:
    assert isinstance(MemoryStore(), SessionStore)
    assert isinstance(SqliteStore(":memory:"), SessionStore)
    assert check_store(MemoryStore()) is not None
    with pytest.raises(TypeError, match="load, commit, delete, aclose"):
        check_store(object())


def test_conflict_messages_say_what_was_found() -> None:
    assert "already exists (version 2)" in conflict_message("k", 2, None)
    assert "no longer stored" in conflict_message("k", None, 3)
    assert "at version 4, not 3" in conflict_message("k", 4, 3)


async def test_memory_store_versions_commits() -> None:
    store = MemoryStore()
    assert await store.load("k") is None
    first = await store.commit(SessionRecord("k", (Message.user("a"),)), expected_version=None)
    assert first.version == 1 and await store.load("k") == first
    second = await store.commit(SessionRecord("k", (Message.user("b"),), version=99), expected_version=1)
    assert second.version == 2  # the store sets the version, whatever the record said
    assert len(store) == 1 and "k" in store and list(store.keys()) == ["k"]
    assert repr(store) == "MemoryStore(1 sessions)"


async def test_memory_store_refuses_a_stale_commit_and_changes_nothing() -> None:
    store = MemoryStore()
    await store.commit(SessionRecord("k", (Message.user("a"),)), expected_version=None)
    with pytest.raises(SessionConflictError, match="already exists") as info:
        await store.commit(SessionRecord("k", (Message.user("x"),)), expected_version=None)
    assert info.value.key == "k"
    with pytest.raises(SessionConflictError, match="at version 1, not 5"):
        await store.commit(SessionRecord("k", (Message.user("x"),)), expected_version=5)
    loaded = await store.load("k")
    assert loaded is not None and loaded.messages == (Message.user("a"),) and loaded.version == 1
    with pytest.raises(TypeError, match="SessionRecord"):
        await store.commit("k", expected_version=None)  # type: ignore[arg-type]


async def test_memory_store_deletes_at_a_version_and_keeps_records_after_aclose() -> None:
    store = MemoryStore()
    await store.commit(SessionRecord("k"), expected_version=None)
    await store.commit(SessionRecord("j"), expected_version=None)
    assert not await store.delete("k", expected_version=2)
    assert await store.delete("k", expected_version=1)
    assert not await store.delete("k")
    with pytest.raises(SessionConflictError, match="no longer stored"):
        await store.commit(SessionRecord("k"), expected_version=1)
    await store.aclose()
    assert await store.load("j") is not None
