"""A resolved turn keeps the paused turn's delegated runs (``children``), as ``agent.resume`` keeps them.

``docs/agents.md`` ("Approvals"): the resumed result keeps the paused run's ``children`` ahead of its own; the
README's "Agents together" reads ``result.children`` after ``session.resolve``.  A session resumed from the
pause it had stored (a ``PausedRun``: plain data) and so returned ``children=()``: the delegated runs of the steps
before the pause were lost — on every store, in the runtime that paused as in another one.  The pause's children
are kept with it in the record now (format 3's optional ``"children"``), and a record stored before that loads
with none.

``MemoryStore``: virtual time.  ``SqliteStore`` (a real file) and ``PostgresStore`` (a real server): real threads,
the real clock.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from agentactors import Agent, LLMResponse, Runtime, ScriptedProvider
from agentactors.errors import ProviderError, RedactedException
from agentactors.loop.pause import PausedRun
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest, Message, StopReason, ToolCall, Usage
from agentactors.pricing import Cost
from agentactors.sessions import MemoryStore, PostgresStore, SqliteStore, codec
from agentactors.sessions.format import dump_head, dump_record, load_record
from agentactors.sessions.store import SessionRecord
from agentactors.tools.registry import tool
from tests.support.postgres import PASSWORD, PostgresServer, postgres_dsn, postgres_server  # noqa: F401
from tests.support.prices import STEP, USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.anyio

HISTORY = (Message.user("hi"), Message.assistant("hello"))


@tool
async def web_search(q: str) -> str:
    """Search the web."""
    return f"found: {q} is broken"


@tool(requires_approval=True)
async def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def _priced(reply: Any) -> LLMResponse:
    """``reply`` (a str, or tool calls) as a response that costs ``STEP``."""
    if isinstance(reply, str):
        return LLMResponse(reply, usage=USAGE)
    return LLMResponse("", tool_calls=tuple(reply), usage=USAGE)


def _scripted(*replies: Any) -> ScriptedProvider:
    """Each call answers the next reply, priced (for one runtime's runs: the script does not start again)."""
    left: Iterator[Any] = iter(replies)
    return ScriptedProvider(lambda _: _priced(next(left)), name="openai", model="gpt-4o")


def _by_last_call(first: Any, after: dict[str, Any]) -> ScriptedProvider:
    """Answers by the tool result last read (``after[call id]``), else ``first``: any process's agent answers a
    conversation alike, whoever paused it."""

    def model(request: LLMRequest) -> LLMResponse:
        last = request.messages[-1]
        return _priced(after[last.tool_call_id] if last.role == "tool" and last.tool_call_id else first)

    return ScriptedProvider(model, name="openai", model="gpt-4o")


def _support() -> Agent[str]:
    """Delegates to a searcher (a child run of two steps), then pauses on a refund; answers "done" once resumed."""
    searcher = Agent(
        _by_last_call([ToolCall("s1", "web_search", {"q": "order 17"})], {"s1": "order 17 is broken"}),
        name="searcher",
        tools=[web_search],
    )
    return Agent(
        _by_last_call(
            [ToolCall("c1", "searcher", {"input": "order 17"})],
            {"c1": [ToolCall("c2", "refund", {"order": "17"})], "c2": "done"},
        ),
        name="support",
        tools=[searcher.as_tool(), refund],
    )


async def _by_agent_resume() -> RunResult[Any]:
    """What ``agent.resume`` gives for the same run: the reference a resolved turn must match."""
    agent = _support()
    async with Runtime():
        paused = await agent.run("Refund order 17")
        resumed = await agent.resume(paused, {"c2": True})
    return resumed


def _check_resolved(resolved: RunResult[Any], paused: RunResult[Any], reference: RunResult[Any]) -> None:
    assert resolved.ok and resolved.content == "done"
    assert [c.agent for c in paused.children] == ["searcher"]
    assert [c.agent for c in reference.children] == ["searcher"]
    assert resolved.children == paused.children  # the searcher's run, as it ended (its run id, its messages)
    # ... as agent.resume keeps it (another run: its ids and durations differ)
    assert [(c.agent, c.content, c.steps, c.usage, c.cost, c.messages[-1]) for c in resolved.children] == [
        (c.agent, c.content, c.steps, c.usage, c.cost, c.messages[-1]) for c in reference.children
    ]
    assert resolved.children[0].content == "order 17 is broken" and resolved.children[0].steps == 2
    # Usage counts the paused part, children included (the pause keeps it); cost counts from the resume
    # (docs/costs.md) — both as agent.resume reports them.
    assert resolved.usage == reference.usage == USAGE + USAGE + USAGE + USAGE + USAGE
    assert resolved.cost == reference.cost and resolved.cost is not None
    assert resolved.cost.total == pytest.approx(STEP)
    assert resolved.children[0].cost is not None and resolved.children[0].cost.total == pytest.approx(2 * STEP)


# --- through a session: in the runtime that paused, and in another one --------------------------------------------


@pytest.mark.virtual_time
async def test_resolve_keeps_the_paused_turns_children_memory_store() -> None:
    reference = await _by_agent_resume()
    store = MemoryStore()
    async with Runtime() as rt:
        session = rt.session(_support(), "k", store=store)
        paused = await session.send("Refund order 17")
        assert paused.paused
        stored = await store.load("k")
        assert stored is not None and stored.children == paused.children
        resolved = await session.resolve({"c2": True})
    _check_resolved(resolved, paused, reference)
    after = await store.load("k")
    assert after is not None and after.paused is None and after.children == ()  # the answer committed: no pause


@pytest.mark.virtual_time
async def test_resolve_in_another_runtime_keeps_the_children_memory_store() -> None:
    reference = await _by_agent_resume()
    store = MemoryStore()
    async with Runtime() as rt:
        paused = await rt.session(_support(), "k", store=store).send("Refund order 17")
    async with Runtime() as rt:
        resolved = await rt.session(_support(), "k", store=store).resolve({"c2": True})
    _check_resolved(resolved, paused, reference)


async def test_resolve_keeps_the_children_through_a_sqlite_file(tmp_path: Path) -> None:
    reference = await _by_agent_resume()
    path = tmp_path / "chats.db"
    async with Runtime() as rt:
        session = rt.session(_support(), "user-42", store=SqliteStore(path))
        paused = await session.send("Refund order 17")
        same = await session.resolve({"c2": True})
    _check_resolved(same, paused, reference)
    async with Runtime() as rt:  # paused in one runtime (one process), resolved by another, from the file
        paused = await rt.session(_support(), "user-43", store=SqliteStore(path)).send("Refund order 17")
    async with Runtime() as rt:
        resolved = await rt.session(_support(), "user-43", store=SqliteStore(path)).resolve({"c2": True})
    _check_resolved(resolved, paused, reference)


async def test_resolve_keeps_the_children_through_postgres(postgres_dsn: str) -> None:  # noqa: F811
    reference = await _by_agent_resume()
    async with Runtime() as rt:
        async with PostgresStore(postgres_dsn) as store:
            paused = await rt.session(_support(), "user-42", store=store).send("Refund order 17")
    async with Runtime() as rt:
        async with PostgresStore(postgres_dsn) as store:
            loaded = await store.load("user-42")
            assert loaded is not None and loaded.children == paused.children
            resolved = await rt.session(_support(), "user-42", store=store).resolve({"c2": True})
    _check_resolved(resolved, paused, reference)


@pytest.mark.virtual_time
async def test_a_pause_resolved_into_another_pause_keeps_every_child() -> None:
    """Resumed, the run delegates again and pauses again: the second pause holds both children, and so does the
    result that resolves it (as ``agent.resume`` chains them)."""
    searcher = Agent(_scripted("first", "second"), name="searcher")
    agent = Agent(
        _scripted(
            [ToolCall("c1", "searcher", {"input": "one"})],
            [ToolCall("r1", "refund", {"order": "1"})],
            [ToolCall("c2", "searcher", {"input": "two"})],
            [ToolCall("r2", "refund", {"order": "2"})],
            "done",
        ),
        name="support",
        tools=[searcher.as_tool(), refund],
    )
    store = MemoryStore()
    async with Runtime() as rt:
        session = rt.session(agent, "k", store=store)
        assert (await session.send("go")).paused
        again = await session.resolve({"r1": True})
        assert again.paused and [c.content for c in again.children] == ["first", "second"]
    async with Runtime() as rt:
        done = await rt.session(agent, "k", store=store).resolve({"r2": True})
    assert done.ok and [c.content for c in done.children] == ["first", "second"]


# --- the stored record -------------------------------------------------------------------------------------------


def _pause() -> PausedRun:
    call = ToolCall("c2", "refund", {"order": "17"})
    return PausedRun("run-2", (*HISTORY, Message.assistant("", [call])), (call,), (), (call,), {"c2": "money"})


def _children() -> tuple[RunResult[Any], ...]:
    """Children with every field a result may hold: nested children, a typed output, an error, a cost, a pause."""
    grandchild = RunResult("deep", (Message.user("q"), Message.assistant("deep")), steps=1, run_id="g", agent="g")
    call = ToolCall("t1", "lookup", {"k": (1, b"x")})
    typed = RunResult(
        '{"n": 1}',
        (Message.user("count"), Message.assistant("", [call]), Message.tool("t1", "1"), Message.assistant('{"n": 1}')),
        (call,),
        steps=2,
        followups=("more?",),
        usage=Usage(10, 2, reasoning_tokens=1),
        served_by="openai/gpt-4o",
        run_id="child-1",
        output={"n": 1},
        children=(grandchild,),
        agent="counter",
        handoffs=("helper",),
        cost=Cost(0.1, 0.2, currency="EUR", estimated=0.05),
        forked_from="run-0",
    )
    failed = RunResult(
        "", (Message.user("x"),), steps=1, generation_failed=True, run_id="c2",
        error=ProviderError("vendor down", provider="openai", kind="transient"),
    )
    bounded = RunResult("so far", (Message.user("y"),), steps=3, bounded=True, cancelled=True, run_id="c3")
    paused_child = RunResult("", _pause().messages, resume_state=_pause(), run_id="c4")
    return (typed, failed, bounded, paused_child)


def test_a_pauses_children_round_trip_with_the_record() -> None:
    children = _children()
    record = SessionRecord("k", HISTORY, 3, _pause(), "run-2", children=children)
    beside = [json.dumps(codec.messages_to_json(HISTORY))]  # the messages a SQL store keeps beside the document
    for text, pieces in ((dump_record(record), None), (dump_head(record), beside)):
        loaded = load_record(text, key="k", version=3, pieces=pieces)
        assert loaded == record and loaded.children == children  # RunResult's == leaves out error and resume_state
        typed, failed, _, paused_child = loaded.children
        assert typed.output == {"n": 1} and typed.children[0].content == "deep" and typed.cost == children[0].cost
        assert isinstance(failed.error, RedactedException) and not failed.ok  # a stand-in: its type and text
        assert failed.error.original_type == f"{ProviderError.__module__}.ProviderError"
        assert "vendor down" in str(failed.error)
        assert paused_child.resume_state == _pause()


def test_a_child_that_cannot_be_stored_is_kept_without_what_cannot() -> None:
    """A child's typed output of a class of the user's own is not JSON: the pause is still committed (its children
    were never a reason to refuse it), the child kept with ``output=None``."""

    class Answer:
        pass

    child = RunResult("{}", (Message.user("x"),), output=Answer(), run_id="c1")
    record = SessionRecord("k", HISTORY, 1, _pause(), "run-2", children=(child,))
    loaded = load_record(dump_record(record), key="k", version=1)
    assert loaded.paused == _pause() and loaded.children[0].content == "{}" and loaded.children[0].output is None


@pytest.mark.parametrize("fmt", [2, 3])
def test_a_pause_stored_before_its_children_were_kept_loads_with_none(fmt: int) -> None:
    """A record written by an older version (format 2, or format 3 without ``"children"``) loads as it did."""
    doc = {"format": fmt, "messages": codec.messages_to_json(HISTORY), "paused": codec.paused_to_json(_pause()),
           "run_id": "run-2"}
    loaded = load_record(json.dumps(doc), key="k", version=4)
    assert loaded == SessionRecord("k", HISTORY, 4, _pause(), "run-2") and loaded.children == ()


def test_children_belong_to_a_pause() -> None:
    with pytest.raises(ValueError, match="pause"):
        SessionRecord("k", HISTORY, 1, None, "run-2", children=_children())
    with pytest.raises(TypeError, match="RunResult"):
        SessionRecord("k", HISTORY, 1, _pause(), "run-2", children=("not a result",))  # type: ignore[arg-type]


async def test_an_old_pause_in_a_sqlite_file_resolves_with_no_children(tmp_path: Path) -> None:
    """A pause a previous version stored (no ``"children"``) is resolved as before: no children, nothing refused."""
    path = tmp_path / "old.db"
    agent = _support()
    async with Runtime() as rt:
        paused = await rt.session(agent, "k", store=SqliteStore(path)).send("Refund order 17")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        (text,) = conn.execute("SELECT body FROM agentactors_sessions WHERE key = 'k'").fetchone()
        doc = json.loads(text)
        assert [c["agent"] for c in doc["paused"]["children"]] == ["searcher"]
        del doc["paused"]["children"]  # as the previous version wrote it
        conn.execute("UPDATE agentactors_sessions SET body = ? WHERE key = 'k'", (json.dumps(doc),))
    finally:
        conn.close()
    async with Runtime() as rt:
        resolved = await rt.session(_support(), "k", store=SqliteStore(path)).resolve({"c2": True})
    assert resolved.ok and resolved.children == () and paused.children != ()


def test_the_codec_knows_every_field_of_a_result() -> None:
    """A field added to ``RunResult`` (or ``Cost``) must be added to the codec, or a stored child would lose it."""
    child = _children()[0]
    doc = codec.run_result_to_json(attrs.evolve(child, error=ProviderError("x", provider="p", kind="transient"),
                                                bounded=True, cancelled=True, generation_failed=True,
                                                resume_state=_pause(), stop_reason=StopReason.end_turn))
    assert set(doc) == {f.name.lstrip("_") for f in attrs.fields(RunResult)}
    assert set(doc["cost"]) == {f.name for f in attrs.fields(Cost)}
