"""A live run's control messages at their edges (agentactors/loop/live.py).

Each test is a bug a user hit: an approval timeout that never fired, an answer turned ``bounded`` by a steer it
could not take, steers the conversation cannot hold, ``approval="wait"`` ignored by a journaled run.  A run is
held at a known point by a model or a tool that waits for an event the test sets.  Asyncio and trio; virtual
time where there is no I/O.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from agentactors import Agent, Runtime
from agentactors.events import InMemoryRecorder
from agentactors.journal.sqlite import SqliteJournal
from agentactors.loop.live import Approve, Deny, Steer
from agentactors.messages import LLMRequest, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

pytestmark = pytest.mark.anyio


def _paying_agent(sent: list[int], timeout: float | None = None, at: float | None = None) -> Agent[Any]:
    """An agent whose model pays once (a call that waits in place for a decision), then reports the result;
    ``at``: the (virtual) time its call is made."""

    @tool(requires_approval=True, approval="wait", approval_timeout=timeout)
    async def send_money(amount: int) -> str:
        """Send money."""
        sent.append(amount)
        return f"sent {amount}"

    async def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"result: {last.content}"
        if at is not None:
            await anyio.sleep(at - anyio.current_time())
        return [ToolCall("pay1", "send_money", {"amount": 5})]

    return Agent(ScriptedProvider(model), tools=[send_money])


@pytest.mark.virtual_time
@pytest.mark.timeout(10)  # the bug was a busy loop: virtual time never advanced, so only a real timeout ends it
async def test_an_approval_timeout_fires_whatever_the_float_rounding_of_its_deadline() -> None:
    """``now - start >= timeout`` stayed false at ``start + timeout`` (10.1 + 0.1 - 10.1 < 0.1): the wait, past
    its deadline, went round without end — on virtual time a hang, on a real clock a spin."""
    assert (10.1 + 0.1) - 10.1 < 0.1  # the rounding the test relies on
    sent: list[int] = []
    async with Runtime():
        # The wait for a decision starts at 10.1, where start + timeout - start < timeout in floats.
        result = await _paying_agent(sent, timeout=0.1, at=10.1).run("pay")
    assert sent == [] and result.ok and "no decision within 0.1s" in result.content
    assert anyio.current_time() == pytest.approx(10.2)


@pytest.mark.virtual_time
async def test_a_steer_during_the_last_steps_answer_leaves_the_answer_ok_and_the_steer_unread() -> None:
    """With no step left under ``max_steps``, going on for the steer only ended the run ``bounded``: an answer
    the model gave in full came back not ``ok``."""
    writing, go_on = anyio.Event(), anyio.Event()

    async def model(request: LLMRequest) -> str:
        writing.set()
        await go_on.wait()
        return "Paris is sunny."

    rec = InMemoryRecorder()
    async with Runtime():
        agent = Agent(ScriptedProvider(model), max_steps=1, recorders=[rec])
        async with agent.stream("weather?") as run:
            await writing.wait()
            await run.steer("also Oslo")
            go_on.set()
            result = await run.wait()
    assert result.ok and not result.bounded and result.content == "Paris is sunny." and result.steps == 1
    assert [m.role for m in result.messages] == ["user", "assistant"]
    assert [e.data for e in rec.of_type("run.steers_unread")] == [{"count": 1, "reason": "max_steps"}]


@attrs.frozen
class Forecast:
    city: str
    sky: str


@pytest.mark.virtual_time
async def test_a_steer_during_the_last_steps_typed_answer_keeps_its_output() -> None:
    """A typed run lost its validated output that way: a ``bounded`` result carries ``output=None``."""
    writing, go_on = anyio.Event(), anyio.Event()

    async def model(request: LLMRequest) -> Any:
        writing.set()
        await go_on.wait()
        return [ToolCall("o1", "final_result", {"city": "Paris", "sky": "sunny"})]

    async with Runtime():
        agent: Agent[Forecast] = Agent(ScriptedProvider(model), max_steps=1, output_type=Forecast)
        async with agent.stream("weather?") as run:
            await writing.wait()
            await run.steer("also Oslo")
            go_on.set()
            result = await run.wait()
    assert result.ok and result.output == Forecast("Paris", "sunny")


@pytest.mark.virtual_time
async def test_a_steer_during_an_earlier_steps_answer_still_gets_its_step() -> None:
    writing, go_on = anyio.Event(), anyio.Event()
    seen: list[LLMRequest] = []

    async def model(request: LLMRequest) -> str:
        seen.append(request)
        if len(seen) == 1:
            writing.set()
            await go_on.wait()
            return "Paris is sunny."
        return "Paris sunny, Oslo rainy."

    async with Runtime():
        async with Agent(ScriptedProvider(model), max_steps=2).stream("weather?") as run:
            await writing.wait()
            await run.steer("also Oslo")
            go_on.set()
            result = await run.wait()
    assert result.ok and result.steps == 2 and result.content == "Paris sunny, Oslo rainy."


@pytest.mark.virtual_time
async def test_a_steer_that_makes_calls_is_refused_and_the_run_goes_on() -> None:
    """An assistant message with tool calls as a steer left calls no result answers: every vendor refuses that
    conversation, so the run failed at its next model call, far from the cause."""
    writing, go_on = anyio.Event(), anyio.Event()
    seen: list[list[str]] = []

    async def model(request: LLMRequest) -> str:
        seen.append([m.role for m in request.messages])
        if len(seen) == 1:
            writing.set()
            await go_on.wait()
        return "answer"

    async with Runtime():
        async with Agent(ScriptedProvider(model)).stream("q") as run:
            await writing.wait()
            with pytest.raises(ValueError, match="tool calls"):
                await run.steer(Message.assistant("", [ToolCall("c1", "lookup", {})]))
            await run.steer(Message.assistant("a note, no calls"))
            go_on.set()
            result = await run.wait()
    assert result.ok and seen == [["user"], ["user", "assistant", "assistant"]]


def test_control_messages_check_what_they_carry() -> None:
    with pytest.raises(TypeError, match="Message"):
        Steer("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool message"):
        Steer(Message.tool("c1", "42"))
    with pytest.raises(TypeError, match="reason"):
        Deny("c1", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="call id"):
        Approve(["c1"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="call id"):
        Deny(None)  # type: ignore[arg-type]


async def test_a_journaled_run_waits_in_place_for_an_approval_as_any_run_does(tmp_path: Path) -> None:
    """Under ``Runtime(journal=...)`` the executor is asked through a taped reference, which hid the tool's
    ``approval="wait"``: the run paused instead, and ``run.approve`` had nothing to answer."""
    sent: list[int] = []
    agent = _paying_agent(sent)
    async with SqliteJournal(tmp_path / "runs.db") as journal, Runtime(journal=journal):
        with anyio.fail_after(30):
            async with agent.stream("pay") as run:
                async for event in run:
                    if event.type == "run.awaiting_approval":
                        assert [c.id for c in run.state().pending] == ["pay1"]
                        await run.approve("pay1")
                result = await run.wait()
    assert not result.paused and result.ok and result.content == "result: sent 5" and sent == [5]


@pytest.mark.virtual_time
async def test_a_steer_left_unread_by_an_interrupt_during_the_answer_says_interrupted() -> None:
    """A steer and an interrupt both sent while the model wrote its answer: the interrupt keeps the run from
    going on for the steer, yet the unread steer was reported with reason ``ended``, as if nothing had asked
    the run to stop."""
    writing, go_on = anyio.Event(), anyio.Event()

    async def model(request: LLMRequest) -> str:
        writing.set()
        await go_on.wait()
        return "Paris is sunny."

    rec = InMemoryRecorder()
    async with Runtime():
        agent = Agent(ScriptedProvider(model), recorders=[rec])
        async with agent.stream("weather?") as run:
            await writing.wait()
            await run.steer("also Oslo")
            await run.interrupt("enough")
            go_on.set()
            result = await run.wait()
    assert result.content == "Paris is sunny." and result.steps == 1
    assert [e.data for e in rec.of_type("run.steers_unread")] == [{"count": 1, "reason": "interrupted"}]
