"""Approvals in a session: the pause is persisted, claimed by one resolve, and resumed (docs/sessions.md).

Virtual time on both backends (MemoryStore: no threads, no sockets); the same over SQLite and across
processes is in tests/integration/test_sessions_sqlite.py.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import ErrorKind, ProviderError, SessionConflictError, SessionPausedError
from agentactors.events import InMemoryRecorder, SessionCommitted
from agentactors.messages import LLMRequest, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import MemoryStore
from agentactors.tools.registry import tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REFUNDS: list[int] = []


@tool(requires_approval=True)
async def refund(amount: int) -> str:
    """Refund an amount to the customer."""
    REFUNDS.append(amount)
    return f"refunded {amount}"


@pytest.fixture(autouse=True)
def _no_refunds() -> None:
    REFUNDS.clear()


def refund_model(request: LLMRequest) -> Any:
    """Asks for a refund on 'refund N'; answers with what the tool said (or the denial) after it."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"tool said: {last.content}"
    text = last.content
    if text.startswith("refund "):
        return [ToolCall(f"c-{text[7:]}", "refund", {"amount": int(text[7:])})]
    return f"ok: {text}"


def _agent() -> Agent[str]:
    return Agent(ScriptedProvider(refund_model), tools=[refund])


async def test_a_paused_turn_is_persisted_and_holds_the_session() -> None:
    store = MemoryStore()
    async with Runtime() as rt:
        session = rt.session(_agent(), "k", store=store)
        await session.send("hello")
        before = session.history
        result = await session.send("refund 5")
        assert result.paused and [c.id for c in result.pending_approvals] == ["c-5"]
        assert session.paused and session.pending_approvals == result.pending_approvals
        assert session.history == before and session.version == 2  # history unchanged, the pause committed
        stored = await store.load("k")
        assert stored is not None and stored.paused == result.resume_state and stored.messages == before
        with pytest.raises(SessionPausedError, match="resolve") as info:
            await session.send("anything")
        assert [c.id for c in info.value.pending] == ["c-5"] and info.value.key == "k"
        assert REFUNDS == []


async def test_resolve_approves_and_commits_the_resumed_turn() -> None:
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        session = rt.session(_agent(), "k")
        await session.send("refund 5")
        result = await session.resolve({"c-5": True})
        assert not result.paused and result.content == "tool said: refunded 5"
        assert REFUNDS == [5]
        assert session.history == result.messages and not session.paused
        assert [m.role for m in session.history] == ["user", "assistant", "tool", "assistant"]
        assert session.version == 3  # the pause, its claim, the resumed turn
        assert (await session.send("thanks")).content == "ok: thanks"
    committed = [(e.version, e.paused, e.resolving) for e in rec.events if isinstance(e, SessionCommitted)]
    assert committed == [(1, True, False), (2, False, True), (3, False, False), (4, False, False)]


async def test_resolve_denies_with_a_reason_the_model_reads() -> None:
    provider = ScriptedProvider(refund_model)
    async with Runtime() as rt:
        session = rt.session(Agent(provider, tools=[refund]), "k")
        await session.send("refund 500")
        result = await session.resolve({"c-500": "over the limit"})
        assert REFUNDS == []
        tool_message = provider.requests[-1].messages[-1]
        assert tool_message.role == "tool" and "over the limit" in tool_message.content
        assert result.content.startswith("tool said:") and not session.paused


async def test_a_second_resolve_of_the_same_pause_conflicts_and_runs_nothing() -> None:
    async with Runtime() as rt:
        session = rt.session(_agent(), "k")
        await session.send("refund 5")
        await session.resolve({"c-5": True})
        with pytest.raises(SessionConflictError, match="no pause to resolve"):
            await session.resolve({"c-5": True})
        assert REFUNDS == [5]


async def test_concurrent_resolves_one_wins_the_other_conflicts() -> None:
    async with Runtime() as rt:
        session = rt.session(_agent(), "k")
        await session.send("refund 5")
        outcomes: list[str] = []

        async def resolve() -> None:
            try:
                await session.resolve({"c-5": True})
                outcomes.append("resolved")
            except SessionConflictError:
                outcomes.append("conflict")

        async with anyio.create_task_group() as tg:
            tg.start_soon(resolve)
            tg.start_soon(resolve)
        assert sorted(outcomes) == ["conflict", "resolved"]
        assert REFUNDS == [5]


async def test_a_pause_claimed_in_another_runtime_conflicts_here() -> None:
    store = MemoryStore()
    async with Runtime() as here, Runtime() as there:
        mine = here.session(_agent(), "k", store=store)
        theirs = there.session(_agent(), "k", store=store)
        await mine.send("refund 5")
        await theirs.resolve({"c-5": True})  # activates there from the store, claims, resumes
        assert mine.paused  # this runtime still holds the pause it saw
        with pytest.raises(SessionConflictError, match="at version 3, not 1"):
            await mine.resolve({"c-5": True})
        assert REFUNDS == [5]
        assert (await mine.send("and now?")).content == "ok: and now?"  # reloaded: no pause any more
        assert mine.version == 4


async def test_a_pause_resolved_in_another_runtime_does_not_hold_this_ones_next_turn() -> None:
    """The approval lands on another process (a webhook), which resolves the pause from the store; the user's next
    message lands here.  This runtime refused it with ``SessionPausedError`` from its own stale copy — never asking
    the store, so again at every message until the session idled out.  A refusal is now checked against the store
    first: the turn goes on from the resolved conversation."""
    store = MemoryStore()
    async with Runtime() as here, Runtime() as there:
        mine = here.session(_agent(), "k", store=store)
        await mine.send("refund 5")
        paused_here = mine.paused  # (a variable: an assert on the attribute would narrow it for the rest)
        assert paused_here
        assert (await there.session(_agent(), "k", store=store).resolve({"c-5": True})).ok
        result = await mine.send("and now?")
        assert result.content == "ok: and now?" and REFUNDS == [5]
        assert not mine.paused and mine.version == 4
        assert [m.content for m in mine.history if m.role == "tool"] == ["refunded 5"]  # on from the resolved turn


async def test_a_pause_made_in_another_runtime_is_resolved_here() -> None:
    """The reverse: this runtime holds the session unpaused; another one's turn paused it.  ``resolve`` here said
    "never paused" (``SessionConflictError``) from its stale copy; it now reads the store and resolves the pause."""
    store = MemoryStore()
    async with Runtime() as here, Runtime() as there:
        mine = here.session(_agent(), "k", store=store)
        await mine.send("hello")
        assert (await there.session(_agent(), "k", store=store).send("refund 6")).paused
        result = await mine.resolve({"c-6": True})
        assert result.content == "tool said: refunded 6" and REFUNDS == [6]
        assert mine.version == 4  # the pause (2), its claim (3), the resumed turn (4)
        with pytest.raises(SessionConflictError, match="no pause to resolve"):  # resolved: it is still refused
            await mine.resolve({"c-6": True})
        assert REFUNDS == [6]


async def test_a_paused_session_is_resolved_in_a_new_runtime() -> None:
    store = MemoryStore()
    async with Runtime() as rt:
        await rt.session(_agent(), "k", store=store).send("refund 7")
    async with Runtime() as rt:
        session = rt.session(_agent(), "k", store=store)
        assert not session.paused  # not active in this runtime yet: nothing known
        result = await session.resolve({"c-7": True})
        assert result.content == "tool said: refunded 7" and REFUNDS == [7]


async def test_decisions_that_do_not_fit_claim_nothing() -> None:
    async with Runtime() as rt:
        session = rt.session(_agent(), "k")
        await session.send("refund 5")
        with pytest.raises(ValueError, match="no decision for pending calls"):
            await session.resolve({})
        with pytest.raises(ValueError, match="not pending"):
            await session.resolve({"c-5": True, "c-9": True})
        with pytest.raises(TypeError, match="True, False or a reason"):
            await session.resolve({"c-5": 1})  # type: ignore[dict-item]
        assert session.paused and session.version == 1  # still the pause, unclaimed
        assert (await session.resolve({"c-5": True})).content == "tool said: refunded 5"


async def test_a_resumed_turn_that_fails_consumes_the_pause() -> None:
    failure = ProviderError("vendor down", provider="scripted", kind=ErrorKind.transient)
    provider = ScriptedProvider(["hi back", [ToolCall("c1", "refund", {"amount": 5})], failure])
    async with Runtime() as rt:
        session = rt.session(Agent(provider, tools=[refund]), "k")
        await session.send("hi")
        before = session.history
        await session.send("refund please")
        result = await session.resolve({"c1": True})
        assert result.generation_failed and REFUNDS == [5]
        assert not session.paused and session.history == before  # as before the paused turn
        with pytest.raises(SessionConflictError):
            await session.resolve({"c1": True})  # no second run of the same calls


async def test_a_resumed_turn_may_pause_again() -> None:
    calls = iter([[ToolCall("c1", "refund", {"amount": 1})], [ToolCall("c2", "refund", {"amount": 2})], "both done"])
    provider = ScriptedProvider(lambda request: next(calls))
    async with Runtime() as rt:
        session = rt.session(Agent(provider, tools=[refund]), "k")
        await session.send("two refunds")
        again = await session.resolve({"c1": True})
        assert again.paused and [c.id for c in session.pending_approvals] == ["c2"]
        history = session.history  # a local: mypy would hold session.history empty past the resolve below
        assert history == ()  # nothing committed as history while paused
        final = await session.resolve({"c2": True})
        assert final.content == "both done" and REFUNDS == [1, 2]
        assert [m.role for m in session.history] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
        statuses = [m.content for m in session.history if m.role == "tool"]
        assert statuses == ["refunded 1", "refunded 2"]


async def test_a_denied_call_reaches_the_history_as_denied() -> None:
    async with Runtime() as rt:
        session = rt.session(_agent(), "k")
        await session.send("refund 5")
        await session.resolve({"c-5": False})
        tool_message = next(m for m in session.history if m.role == "tool")
        assert tool_message.is_error and "denied it" in tool_message.content
        assert "Reason: denied by a person" in tool_message.content
        assert REFUNDS == []


async def test_resolve_on_a_session_that_never_paused_conflicts() -> None:
    async with Runtime() as rt:
        session = rt.session(_agent(), "k")
        with pytest.raises(SessionConflictError, match="never paused"):
            await session.resolve({"x": True})
        assert session.version is None  # nothing was committed
