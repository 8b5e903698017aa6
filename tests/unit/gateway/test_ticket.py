"""``agent.run(..., deadline=, priority=)``: one deadline bounds the whole run; a class orders it at the provider.

Virtual time on both backends.  The in-flight HTTP request being cancelled at the deadline is checked
over loopback in tests/integration/test_run_deadline_over_http.py.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    ErrorKind,
    InMemoryRecorder,
    LLMRequest,
    LLMResponse,
    Message,
    ProviderActor,
    ProviderError,
    RunDeadlineExceeded,
    Runtime,
    ScriptedProvider,
    ToolCall,
    tool,
    with_retry,
)
from agentactors.gateway.ticket import current_ticket, enter, leave, start_ticket

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def overloaded() -> ProviderError:
    return ProviderError("overloaded", provider="scripted", kind=ErrorKind.transient, status=529)


async def test_a_run_that_ends_in_time_is_untouched() -> None:
    agent = Agent(ScriptedProvider(["hello"]))
    async with Runtime():
        result = await agent.run("hi", deadline=5.0)
    assert result.ok and result.content == "hello" and result.error is None


async def test_the_deadline_bounds_a_wait_for_budget() -> None:
    rec = InMemoryRecorder()
    provider = ScriptedProvider(["first", "never sent"])
    async with Runtime(recorders=[rec]) as rt:
        ref = ProviderActor.shared(rt, provider, requests_per_minute=1)
        agent = Agent(ref)
        assert (await agent.run("one")).ok
        start = anyio.current_time()
        result = await agent.run("two", deadline=5.0)  # the next request is 60 s away
        elapsed = anyio.current_time() - start
    assert elapsed == pytest.approx(5.0)
    assert isinstance(result.error, RunDeadlineExceeded)  # in the result, not raised
    assert result.error.deadline == 5.0 and result.error.step == 1
    assert not result.ok and not result.bounded and result.content == ""
    assert result.messages == (Message.user("two"),)
    assert len(provider.requests) == 1  # the waiting request never reached the provider
    assert [e.type for e in rec.events if e.run_id == result.run_id][-2:] == ["run.deadline_exceeded", "run.finished"]


async def test_the_deadline_bounds_retries_backoff_the_earlier_deadline_wins() -> None:
    rec = InMemoryRecorder()
    calls: list[float] = []

    def always_overloaded(request: LLMRequest) -> ProviderError:
        calls.append(anyio.current_time())
        return overloaded()

    retrying = with_retry(ScriptedProvider(always_overloaded), max_attempts=10, base_delay=4.0, jitter=(1.0, 1.0))
    agent = Agent(retrying)
    async with Runtime(recorders=[rec]):
        start = anyio.current_time()
        result = await agent.run("hi", deadline=10.0)
        elapsed = anyio.current_time() - start
    # Waits of 4 then 8 s: the second would end at 12 > 10, so it is not started and the vendor's
    # error is the run's, at once — the run ends at 4 s, not at the deadline, not after 10 attempts.
    assert [t - start for t in calls] == pytest.approx([0.0, 4.0])
    assert elapsed == pytest.approx(4.0)
    assert result.generation_failed and isinstance(result.error, ProviderError) and result.error.status == 529
    [exhausted] = rec.of_type("retry.exhausted")
    assert "run's deadline" in exhausted.reason

    # with_retry's own, earlier deadline still applies under a later run deadline.
    calls.clear()
    own = with_retry(ScriptedProvider(always_overloaded), max_attempts=10, base_delay=1.0, jitter=(1.0, 1.0),
                     deadline=2.0)
    async with Runtime():
        start = anyio.current_time()
        result = await Agent(own).run("hi", deadline=60.0)
    assert [t - start for t in calls] == pytest.approx([0.0, 1.0])  # 1 + 2 > 2: the second wait is not started
    assert isinstance(result.error, ProviderError)


async def test_the_deadline_bounds_a_tool_step_and_keeps_a_conversation_to_go_on_from() -> None:
    seen: list[str] = []

    @tool
    async def slow_lookup(q: str) -> str:
        """Looks something up, slowly."""
        try:
            await anyio.sleep(100)
        except anyio.get_cancelled_exc_class():
            seen.append("cancelled")
            raise
        return "found"

    provider = ScriptedProvider([[ToolCall("c1", "slow_lookup", {"q": "x"})]])
    agent = Agent(provider, tools=[slow_lookup])
    async with Runtime():
        start = anyio.current_time()
        result = await agent.run("look it up", deadline=3.0)
        assert anyio.current_time() - start == pytest.approx(3.0)
    assert isinstance(result.error, RunDeadlineExceeded) and result.error.step == 1
    assert seen == ["cancelled"]  # the tool saw the cancellation
    # The assistant turn whose calls got no results is not kept: the messages can be sent again.
    assert result.messages == (Message.user("look it up"),)
    assert result.tool_calls == (ToolCall("c1", "slow_lookup", {"q": "x"}),)


async def test_what_was_answered_before_the_deadline_is_kept() -> None:
    @tool
    async def stall() -> str:
        """Never returns in time."""
        await anyio.sleep(100)
        return "late"

    # The step's substantive text: the model talks, then calls the tool that runs past the deadline.
    provider = ScriptedProvider([LLMResponse("Checking the stock now.", (ToolCall("c0", "stall", {}),))])
    agent = Agent(provider, tools=[stall], nudges=False)
    async with Runtime():
        result = await agent.run("stock?", deadline=2.0)
    assert isinstance(result.error, RunDeadlineExceeded)
    assert result.bounded and result.content == "Checking the stock now."


async def test_a_streamed_run_ends_at_its_deadline_too() -> None:
    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(50)
        return "too late"

    agent = Agent(ScriptedProvider(slow))
    async with Runtime():
        async with agent.stream("hi", deadline=1.5) as run:
            types = [event.type async for event in run]
        result = run.result
    assert isinstance(result.error, RunDeadlineExceeded)
    assert "run.deadline_exceeded" in types and types[-1] == "run.finished"


async def test_a_child_run_inherits_the_deadline_age_and_class() -> None:
    tickets: list[Any] = []

    async def slow_child_model(request: LLMRequest) -> str:
        tickets.append(current_ticket())
        await anyio.sleep(100)
        return "child answer"

    child = Agent(ScriptedProvider(slow_child_model))

    @tool
    async def delegate(task: str) -> str:
        """Hands the task to a child agent."""
        result = await child.run(task)  # no deadline of its own
        return result.content

    parent_tickets: list[Any] = []

    def parent_model(request: LLMRequest) -> Any:
        parent_tickets.append(current_ticket())
        return [ToolCall("c1", "delegate", {"task": "sub"})]

    parent = Agent(ScriptedProvider(parent_model), tools=[delegate])
    async with Runtime():
        start = anyio.current_time()
        result = await parent.run("do it", deadline=4.0, priority=2)
        assert anyio.current_time() - start == pytest.approx(4.0)
    assert isinstance(result.error, RunDeadlineExceeded)
    [mine], [theirs] = parent_tickets, tickets
    assert theirs.deadline == mine.deadline and theirs.budget == 4.0
    assert theirs.order == mine.order and theirs.priority == 2


async def test_a_child_keeps_its_own_earlier_deadline_and_class() -> None:
    token = enter(start_ticket(10.0, priority=1))
    try:
        earlier = start_ticket(3.0, priority=5)
        later = start_ticket(30.0)
    finally:
        leave(token)
    now = anyio.current_time()
    assert earlier.deadline == pytest.approx(now + 3.0) and earlier.priority == 5 and earlier.budget == 3.0
    assert later.deadline == pytest.approx(now + 10.0) and later.priority == 1 and later.budget == 10.0


async def test_priority_orders_runs_at_a_shared_provider() -> None:
    served: list[str] = []

    async def model(request: LLMRequest) -> str:
        served.append(request.messages[-1].content)
        await anyio.sleep(1.0)
        return "ok"

    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(model), max_concurrency=1)
        agent = Agent(ref)
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(agent.run, f"batch {i}")  # started first, class 0
                await anyio.sleep(0.001)
            tg.start_soon(lambda: agent.run("interactive", priority=1))
    assert served == ["batch 0", "interactive", "batch 1", "batch 2", "batch 3"]


async def test_deadline_and_priority_are_checked() -> None:
    agent = Agent(ScriptedProvider(["x"]))
    async with Runtime():
        with pytest.raises(ValueError, match="deadline"):
            await agent.run("hi", deadline=0)
        with pytest.raises(ValueError, match="deadline"):
            await agent.run("hi", deadline=-1.0)
        with pytest.raises(TypeError, match="priority"):
            await agent.run("hi", priority="high")  # type: ignore[arg-type]
