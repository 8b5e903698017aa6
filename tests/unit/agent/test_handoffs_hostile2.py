"""Handoffs and approvals, as a hostile production user drives them (second pass): a pause made after a handoff
resumed while the paused agent's toolset is down or hangs (streamed too), an unnamed agent's pause offered to
another agent, a person denying a waiting call with megabytes of text and a key pasted into it, a handoff to an
object that only looks like an agent.  What a user relies on: a resume that could not start leaves the pause to
be resumed again; a pause goes on in the agent it was made in; a reason reaches the model and the records bounded
and without a secret; a handoff that cannot work is refused when it is made.  Both backends, virtual time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, LLMRequest, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.agent.handoffs import handoff
from agentactors.errors import PauseConsumedError
from agentactors.loop.pause import MAX_REASON_CHARS
from agentactors.tools.toolset import ToolsetError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

PAID: list[int] = []
KEY = "sk-live-0123456789abcdefghijklmnopqrstuv"


@tool(requires_approval=True)
async def refund(amount: int) -> str:
    """Refund an amount."""
    PAID.append(amount)
    return f"refunded {amount}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    PAID.clear()


class Flaky:
    """A toolset that lists ``refund`` while it is up, fails while it is down, hangs while it is stuck."""

    name = "flaky"

    def __init__(self) -> None:
        self.mode = "up"
        self.listed = 0

    async def list_tools(self, host: Any) -> Sequence[Any]:
        if self.mode == "down":
            raise OSError("no route to host")
        if self.mode == "stuck":
            await anyio.sleep_forever()
        self.listed += 1
        return [refund]


def _pair(toolset: Flaky) -> tuple[Agent[str], ScriptedProvider]:
    model = ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})], "refunded"])
    billing = Agent(model, name="billing", toolsets=[toolset])
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    return triage, model


async def test_a_streamed_resume_after_a_handoff_gives_the_pause_back_when_the_toolset_cannot_list() -> None:
    toolset = Flaky()
    triage, model = _pair(toolset)
    async with Runtime():
        paused = await triage.run("refund 5")
        assert paused.paused and paused.agent == "billing"
        toolset.mode = "down"
        with pytest.raises(ToolsetError, match="could not list"):
            async with triage.resume_stream(paused, {"r1": True}) as run:
                await run.wait()
        assert PAID == [] and model.calls == 1
        toolset.mode = "up"
        async with triage.resume_stream(paused, {"r1": True}) as run:
            result = await run.wait()
        assert result.ok and result.agent == "billing" and PAID == [5]
        with pytest.raises(PauseConsumedError):  # and once only
            await triage.resume(paused, {"r1": True})


async def test_a_resume_after_a_handoff_whose_toolset_hangs_ends_at_its_deadline_and_gives_the_pause_back() -> None:
    toolset = Flaky()
    triage, _ = _pair(toolset)
    async with Runtime():
        paused = await triage.run("refund 5")
        toolset.mode = "stuck"
        with anyio.fail_after(600):
            with pytest.raises(ToolsetError, match="deadline"):
                await triage.resume(paused, {"r1": True}, deadline=5)
        assert PAID == [] and anyio.current_time() < 60
        toolset.mode = "up"
        result = await triage.resume(paused, {"r1": True})
    assert result.ok and PAID == [5]


async def test_a_resume_after_a_handoff_lists_the_paused_agents_toolset_once_and_answers_as_it() -> None:
    toolset = Flaky()
    triage, model = _pair(toolset)
    async with Runtime():
        paused = await triage.run("refund 5")
        before = toolset.listed
        result = await triage.resume(paused, {"r1": True})
    assert result.ok and result.agent == "billing" and result.content == "refunded" and PAID == [5]
    assert toolset.listed == before + 1 and model.calls == 2


async def test_a_pause_of_an_unnamed_agent_is_not_resumed_by_another_agent_streamed_either() -> None:
    unnamed = Agent(ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})], "done"]), tools=[refund])
    other = Agent(
        ScriptedProvider(["other answered"]),
        name="other",
        tools=[refund],
        handoffs=[Agent(ScriptedProvider([]), name="billing")],
    )
    async with Runtime():
        paused = await unnamed.run("refund 5")
        with pytest.raises(ValueError, match="unnamed agent"):
            other.resume_stream(paused, {"r1": True})
        assert PAID == []
        result = await unnamed.resume(paused, {"r1": True})  # left to its own agent
    assert result.ok and PAID == [5] and result.content == "done"


async def test_an_unnamed_agent_with_handoffs_resumes_its_own_pause() -> None:
    unnamed = Agent(
        ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})], "done"]),
        tools=[refund],
        handoffs=[Agent(ScriptedProvider([]), name="billing")],
    )
    async with Runtime():
        paused = await unnamed.run("refund 5")
        result = await unnamed.resume(paused, {"r1": True})
    assert result.ok and PAID == [5] and result.content == "done"


def _waiting_agent(recorder: InMemoryRecorder) -> Agent[str]:
    @tool(requires_approval=True, approval="wait")
    async def send_money(amount: int) -> str:
        """Send money."""
        PAID.append(amount)
        return f"sent {amount}"

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return "understood"
        return [ToolCall("pay1", "send_money", {"amount": 5})]

    return Agent(ScriptedProvider(model), tools=[send_money], recorders=[recorder])


async def test_a_live_denial_with_a_huge_reason_reaches_the_model_and_the_events_bounded_and_redacted() -> None:
    rec = InMemoryRecorder()
    agent = _waiting_agent(rec)
    reason = f"\x00\x1b[31mnot this card, key {KEY}\r\n\x07 " + "A" * 3_000_000
    async with Runtime():
        async with agent.stream("pay") as run:
            async for event in run:
                if event.type == "run.awaiting_approval":
                    break
            await run.deny("pay1", reason)
            result = await run.wait()
    assert result.ok and PAID == []
    text = next(m.content for m in result.messages if m.role == "tool" and m.tool_call_id == "pay1")
    assert "not this card" in text and KEY not in text
    assert len(text) < MAX_REASON_CHARS + 500 and "cut" in text
    assert not any(ch in text for ch in "\x00\x1b\x07\r")
    (denied,) = rec.of_type("run.denied")
    shown = denied.data["reason"]
    assert "not this card" in shown and KEY not in shown and len(shown) < MAX_REASON_CHARS + 200
    assert not any(ch in shown for ch in "\x00\x1b\x07\r")


class DuckWithRun:
    """An object with a ``name`` and a ``run`` that is no Agent: a run cannot seat it."""

    name = "duck"

    async def run(self, prompt: str) -> str:
        return "quack"


def test_a_handoff_to_an_object_that_is_no_agent_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(TypeError, match="DuckWithRun"):
        Agent(ScriptedProvider(["x"]), name="triage", handoffs=[handoff(DuckWithRun())])
    with pytest.raises(TypeError, match="DuckWithRun"):  # a handoff given among the tools too
        Agent(ScriptedProvider(["x"]), name="triage", tools=[handoff(DuckWithRun())])
    # An agent, or an agent's name, still is a handoff's target.
    billing = Agent(ScriptedProvider(["b"]), name="billing")
    triage = Agent(ScriptedProvider(["x"]), name="triage", handoffs=[handoff(billing), handoff("triage")])
    assert [h.target_name for h in triage.handoffs] == ["billing", "triage"]


async def test_a_huge_interrupt_reason_reaches_the_error_and_the_events_bounded_and_redacted() -> None:
    # The same shape as a denial's: a 3 MB reason with escape codes and a pasted key went whole into the
    # run.interrupt_received / run.interrupted events and the RunInterruptedError.
    rec = InMemoryRecorder()
    agent = _waiting_agent(rec)
    reason = f"\x00\x1b[31mstop now, key {KEY}\r\n\x07 " + "A" * 3_000_000
    async with Runtime():
        async with agent.stream("pay") as run:
            async for event in run:
                if event.type == "run.awaiting_approval":
                    break
            await run.interrupt(reason)
            await run.deny("pay1", "no")
            result = await run.wait()
    assert result.error is not None and "stop now" in str(result.error)
    assert KEY not in str(result.error) and len(str(result.error)) < MAX_REASON_CHARS + 500
    for kind in ("run.interrupt_received", "run.interrupted"):
        (event,) = rec.of_type(kind)
        shown = event.data["reason"]
        assert "stop now" in shown and KEY not in shown and len(shown) < MAX_REASON_CHARS + 200, kind
        assert not any(ch in shown for ch in "\x00\x1b\x07\r"), kind
