"""The stored document: its format version, the migration from format 1, and the refusals."""

from __future__ import annotations

import json

import pytest

from agentactors.errors import SessionError, SessionFormatError
from agentactors.loop.pause import PausedRun
from agentactors.messages import Message, ToolCall
from agentactors.sessions import codec
from agentactors.sessions.format import FORMAT, MIGRATIONS, dump_record, load_record, migrate
from agentactors.sessions.store import SessionRecord

HISTORY = (Message.user("hi"), Message.assistant("hello"))


def test_a_record_round_trips_in_the_current_format() -> None:
    call = ToolCall("c1", "refund", {"amount": 5})
    pause = PausedRun("run-2", (*HISTORY, Message.assistant("", [call])), (call,), (), (call,), {"c1": "money"})
    record = SessionRecord("alice", HISTORY, 3, pause, "run-2")
    text = dump_record(record)
    doc = json.loads(text)
    assert doc["format"] == FORMAT == 3
    assert set(doc) == {"format", "messages", "paused", "run_id"}  # key and version live beside it
    assert load_record(text, key="alice", version=3) == record


def test_every_older_format_has_a_migration() -> None:
    assert set(MIGRATIONS) == set(range(1, FORMAT))


def test_format_1_is_migrated_when_read() -> None:
    v1 = json.dumps({"format": 1, "history": codec.messages_to_json(HISTORY)})
    record = load_record(v1, key="alice", version=7)
    assert record == SessionRecord("alice", HISTORY, 7, None, None)
    assert migrate({"format": 1, "history": []}) == {"format": 3, "messages": [], "paused": None, "run_id": None}


def test_a_newer_format_is_refused_and_says_so() -> None:
    with pytest.raises(SessionFormatError, match="format 4, newer than this agentactors reads") as info:
        load_record(json.dumps({"format": 4, "messages": []}), key="alice", version=1)
    assert info.value.found == 4 and info.value.key == "alice"
    assert isinstance(info.value, SessionError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a session document"),
        ('{"messages": []}', "declares no format"),
        ('{"format": "2"}', "declares no format"),
        ('{"format": true}', "declares no format"),
        ('{"format": 0}', "unknown format 0"),
        ('{"format": 2, "messages": [{"role": "robot"}]}', "does not decode"),
        ('{"format": 2, "messages": {"role": "user"}}', "does not decode"),
        ('{"format": 2, "messages": [], "paused": {"messages": []}}', "does not decode"),
    ],
)
def test_what_is_not_a_session_is_refused(text: str, match: str) -> None:
    with pytest.raises(SessionFormatError, match=match):
        load_record(text, key="k", version=1)


def test_an_unstorable_value_fails_the_dump_not_the_read() -> None:
    record = SessionRecord("k", (Message.assistant("", [ToolCall("c", "t", {"when": object()})]),))
    with pytest.raises(TypeError, match="not object"):
        dump_record(record)
