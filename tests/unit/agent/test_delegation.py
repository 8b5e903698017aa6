"""Delegation: ``agent.as_tool()`` runs an agent as a child run of the calling run.

What a user relies on: the child's answer is the tool's result; the parent's result holds the child's
(``children``) and its usage; the child's events carry ``parent_run_id`` and reach the parent's
recorders; the child shares the runtime, its ProviderActors and the caller's ``deps`` and deadline;
cancelling the parent cancels the child; a failed child is an ``error`` result; too deep is ``denied``.
Virtual time on both backends (scripted models, async tools: no thread, no socket).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import attrs
import pytest

from agentactors import (
    Agent,
    ErrorKind,
    InMemoryRecorder,
    LLMRequest,
    LLMResponse,
    ProviderError,
    RunDeadlineExceeded,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolContext,
    ToolStatus,
    Usage,
    tool,
)
from agentactors.agent import AgentTool
from agentactors.errors import DelegationError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def answer(text: str, tokens: int) -> LLMResponse:
    return LLMResponse(text, usage=Usage(input_tokens=tokens, output_tokens=1))


def ask(call_id: str, tool_name: str, text: str) -> ToolCall:
    return ToolCall(call_id, tool_name, {"input": text})


def tool_result(result: Any, call_id: str) -> Any:
    return next(m for m in result.messages if m.role == "tool" and m.tool_call_id == call_id)


def test_as_tool_takes_one_required_string_named_input() -> None:
    child = Agent(ScriptedProvider([]), name="searcher")
    t = child.as_tool(description="Searches the web.")
    assert isinstance(t, AgentTool) and t.agent is child and t.max_depth == 4
    assert t.name == "searcher" and t.description == "Searches the web."
    assert t.parameters["required"] == ["input"]
    assert t.parameters["properties"]["input"]["type"] == "string"
    assert Agent(ScriptedProvider([]), name="web search!").as_tool().name == "web_search"
    with pytest.raises(ValueError, match="name="):
        Agent(ScriptedProvider([])).as_tool()
    with pytest.raises(ValueError, match="max_depth"):
        child.as_tool(max_depth=0)


async def test_the_childs_answer_is_the_tool_result_and_the_parent_holds_its_result_and_usage() -> None:
    child_model = ScriptedProvider([answer("Paris", 7)])
    child = Agent(child_model, name="searcher", system="You search.")
    parent_model = ScriptedProvider([
        LLMResponse("", tool_calls=(ask("c1", "searcher", "capital of France?"),), usage=Usage(10, 2)),
        answer("It is Paris.", 20),
    ])
    parent = Agent(parent_model, name="boss", tools=[child.as_tool()])
    async with Runtime():
        result = await parent.run("Where is the Louvre's city?")
    assert result.ok and result.content == "It is Paris." and result.agent == "boss"
    assert tool_result(result, "c1").content == "Paris"
    assert child_model.requests[0].messages[-1].content == "capital of France?"  # the model wrote the prompt
    assert child_model.requests[0].messages[0].content == "You search."
    (kid,) = result.children
    assert kid.content == "Paris" and kid.agent == "searcher" and kid.children == ()
    assert kid.usage == Usage(7, 1)
    assert result.usage == Usage(10, 2) + Usage(20, 1) + Usage(7, 1)  # its own steps and its child's


async def test_child_events_carry_the_parent_run_id_and_reach_the_parents_recorders() -> None:
    parent_rec, runtime_rec = InMemoryRecorder(), InMemoryRecorder()
    child = Agent(ScriptedProvider(["found"]), name="searcher")
    parent = Agent(
        ScriptedProvider([[ask("c1", "searcher", "x")], "done"]),
        name="boss",
        tools=[child.as_tool()],
        recorders=[parent_rec],
    )
    async with Runtime(recorders=[runtime_rec]):
        result = await parent.run("go")
    child_id = result.children[0].run_id
    child_events = [e for e in parent_rec.events if e.run_id == child_id]
    assert child_events, "the parent's recorders receive the child's events"
    assert all(e.parent_run_id == result.run_id for e in child_events)
    assert all(e.parent_run_id is None for e in parent_rec.events if e.run_id == result.run_id)
    started = next(e for e in child_events if e.type == "run.started")
    assert started.parent_call_id == "c1" and started.parent_step == 1 and started.depth == 1
    # The runtime's recorders see each event once, child's included.
    assert len([e for e in runtime_rec.events if e.run_id == child_id]) == len(child_events)
    assert [e.to_dict().get("parent_run_id") for e in child_events][:1] == [result.run_id]  # in the JSONL form


async def test_the_child_shares_the_runtime_provider_actor_and_the_callers_deps() -> None:
    seen: list[Any] = []

    @tool
    async def whoami(ctx: ToolContext) -> str:
        """Who is asking."""
        seen.append(ctx.deps)
        return "you"

    shared = ScriptedProvider([[ask("c1", "helper", "who?")], [ToolCall("w1", "whoami", {})], "it's you", "done"])
    helper = Agent(shared, name="helper", tools=[whoami])
    parent = Agent(shared, name="boss", tools=[helper.as_tool()])
    async with Runtime() as rt:
        result = await parent.run("go", deps={"user": 42})
        actors = rt.stats().actors
    assert result.ok and seen == [{"user": 42}]
    assert actors == 3  # one ProviderActor for the provider both agents were given, and two tool executors


async def test_a_child_that_fails_is_an_error_result_with_a_concise_reason() -> None:
    broken = ProviderError("upstream is down\nwith a long body", provider="vendor", kind=ErrorKind.account, status=402)
    child = Agent(ScriptedProvider([broken]), name="searcher")
    parent_model = ScriptedProvider([[ask("c1", "searcher", "x")], "I could not search."])
    parent = Agent(parent_model, name="boss", tools=[child.as_tool()])
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await parent.run("go")
    assert result.ok and result.content == "I could not search."
    text = tool_result(result, "c1").content
    assert text.startswith("Error: DelegationError: agent 'searcher' did not answer: ProviderError")
    assert "with a long body" not in text  # the first line only
    finished = next(e for e in rec.events if e.type == "tools.finished" and e.call_id == "c1")
    assert finished.status is ToolStatus.error
    assert result.children[0].generation_failed  # the whole failed result is kept


async def test_delegation_deeper_than_max_depth_is_denied_before_the_child_starts() -> None:
    calls = 0

    def model(request: LLMRequest) -> Any:
        nonlocal calls
        calls += 1
        last = request.messages[-1]
        if last.role == "tool":
            return f"level answer after {last.content[:40]}"
        return [ask(f"d{calls}", "recurse", "again")]

    holder: dict[str, AgentTool] = {}

    @tool(name="recurse")
    async def recurse(input: str, ctx: ToolContext) -> Any:
        """Ask the recursive agent."""
        return await holder["tool"].fn(input, ctx)

    agent = Agent(ScriptedProvider(model), name="recursive", tools=[recurse])
    holder["tool"] = agent.as_tool(name="recurse", max_depth=2)
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await agent.run("start")
    assert result.ok
    depths = [e.depth for e in rec.events if e.type == "run.started" and e.parent_run_id is not None]
    assert depths == [1, 2]  # a child and a grandchild; the great-grandchild was refused
    denied = [e for e in rec.events if e.type == "tools.finished" and e.status is ToolStatus.denied]
    assert len(denied) == 1
    assert len(result.children) == 1 and len(result.children[0].children) == 1


async def test_cancelling_the_parent_cancels_the_child() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def slow(request: LLMRequest) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    child = Agent(ScriptedProvider(slow), name="slow")
    parent = Agent(ScriptedProvider([[ask("c1", "slow", "x")], "done"]), name="boss", tools=[child.as_tool()])
    async with Runtime() as rt, anyio.create_task_group() as tg:
        tg.start_soon(parent.run, "go")
        await started.wait()
        tg.cancel_scope.cancel()
    assert cancelled.is_set()
    assert rt.stats().busy == 0


async def test_the_parents_deadline_bounds_the_child() -> None:
    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(100)
        return "late"

    child = Agent(ScriptedProvider(slow), name="slow")
    parent = Agent(ScriptedProvider([[ask("c1", "slow", "x")], "done"]), name="boss", tools=[child.as_tool()])
    async with Runtime():
        start = anyio.current_time()
        result = await parent.run("go", deadline=5.0)
    assert anyio.current_time() - start == pytest.approx(5.0)
    assert isinstance(result.error, RunDeadlineExceeded)


@attrs.frozen
class Finding:
    title: str
    score: int


async def test_a_typed_child_answers_with_its_output_rendered() -> None:
    child = Agent(
        ScriptedProvider([ToolCall("o1", "final_result", {"title": "A", "score": 3})]),
        name="rater",
        output_type=Finding,
    )
    parent = Agent(ScriptedProvider([[ask("c1", "rater", "rate A")], "rated"]), name="boss", tools=[child.as_tool()])
    async with Runtime():
        result = await parent.run("go")
    assert result.children[0].output == Finding("A", 3)
    assert json.loads(tool_result(result, "c1").content) == {"title": "A", "score": 3}


async def test_a_child_that_asks_for_approval_is_an_error_naming_the_calls() -> None:
    @tool(requires_approval=True)
    async def refund(amount: int) -> str:
        """Refund money."""
        return "refunded"

    child = Agent(ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})]]), name="cashier", tools=[refund])
    parent_model = ScriptedProvider([[ask("c1", "cashier", "refund 5")], "sorry"])
    parent = Agent(parent_model, name="boss", tools=[child.as_tool()])
    async with Runtime():
        result = await parent.run("go")
    assert "asked for approval (refund)" in tool_result(result, "c1").content
    assert result.children[0].paused


async def test_a_stream_of_the_parent_carries_child_events_but_its_text_stream_only_its_own_text() -> None:
    child = Agent(ScriptedProvider(["child words", "child words"]), name="helper")
    script: list[Any] = [[ask("c1", "helper", "x")], "parent words"] * 2
    parent = Agent(ScriptedProvider(script), name="boss", tools=[child.as_tool()])
    async with Runtime():
        async with parent.stream("go") as run:
            events = [e async for e in run]
        async with parent.stream("go") as run:
            text = "".join([t async for t in run.text_stream()])
    assert any(e.parent_run_id is not None for e in events)
    assert text == "parent words"


def test_delegation_error_pickles_and_names_the_agent() -> None:
    import pickle

    err = DelegationError("searcher", "ProviderTimeout: slow")
    back = pickle.loads(pickle.dumps(err))
    assert (back.agent, back.reason, str(back)) == ("searcher", "ProviderTimeout: slow", str(err))


async def test_a_finished_run_and_its_link_leave_no_reference_cycle_behind() -> None:
    """A parent's link to its children must go with the run, not wait for the garbage collector.

    (A link that pointed at an origin pointing back at it made every run with a tool step a cycle: the
    collector's passes over them were a tenth of W1's time.)
    """
    import gc

    from agentactors.loop.lineage import Origin, RunLink
    from agentactors.loop.result import RunResult

    child = Agent(ScriptedProvider(lambda r: "child answer", record=False), name="helper")
    script = ScriptedProvider(
        lambda r: "done" if r.messages[-1].role == "tool" else [ask("c1", "helper", "x")], record=False
    )
    parent = Agent(script, name="boss", tools=[child.as_tool()])
    async with Runtime():
        assert (await parent.run("go")).children  # a link, a child, an origin
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for _ in range(3):
                await parent.run("go")
            gc.collect()
            left = [o for o in gc.garbage if isinstance(o, RunLink | Origin | RunResult)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    assert left == []


async def test_a_child_cancelled_through_its_handle_is_an_error_not_an_empty_answer() -> None:
    """An operator cancels a runaway child (``rt.run_ref(child).cancel()``): the parent's model must read that
    the child gave no answer, not an empty string it takes for one."""
    started = anyio.Event()

    async def slow(request: LLMRequest) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    child = Agent(ScriptedProvider(slow), name="slow")
    parent = Agent(ScriptedProvider([[ask("c1", "slow", "x")], "done"]), name="boss", tools=[child.as_tool()])
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt, anyio.create_task_group() as tg:

        async def cancel_the_child() -> None:
            await started.wait()
            child_id = next(e.run_id for e in rec.events if e.type == "run.started" and e.parent_run_id is not None)
            assert child_id is not None
            rt.run_ref(child_id).cancel()

        tg.start_soon(cancel_the_child)
        result = await parent.run("go")
    assert result.children[0].cancelled
    text = tool_result(result, "c1").content
    assert text.startswith("Error: DelegationError: agent 'slow' did not answer: it was cancelled")
    finished = next(e for e in rec.events if e.type == "tools.finished" and e.call_id == "c1")
    assert finished.status is ToolStatus.error


@pytest.mark.parametrize("typed", [False, True])
async def test_a_child_that_reaches_its_step_limit_without_an_answer_is_an_error(typed: bool) -> None:
    """A bounded child with nothing to say (text ``""``, or a typed output of ``None``) did not answer: the
    parent's model must not read ``""`` or ``null`` as its answer."""

    @tool
    async def look() -> str:
        """Look."""
        return "nothing yet"

    @attrs.frozen
    class Found:
        where: str

    child_model = ScriptedProvider(lambda request: [ToolCall("l", "look", {})])
    child: Agent[Any] = Agent(
        child_model, name="looker", tools=[look], max_steps=2, output_type=Found if typed else str
    )
    parent = Agent(ScriptedProvider([[ask("c1", "looker", "find it")], "done"]), name="boss", tools=[child.as_tool()])
    async with Runtime():
        result = await parent.run("go")
    assert result.children[0].bounded
    text = tool_result(result, "c1").content
    assert text.startswith("Error: DelegationError: agent 'looker' did not answer: it stopped at its step limit")


async def test_a_bounded_child_with_an_answer_so_far_answers_with_it() -> None:
    @tool
    async def look() -> str:
        """Look."""
        return "found it in the attic"

    script = [LLMResponse("It is probably in the attic.", tool_calls=(ToolCall("l1", "look", {}),))]
    child = Agent(ScriptedProvider(script * 2), name="looker", tools=[look], max_steps=1)
    parent = Agent(ScriptedProvider([[ask("c1", "looker", "find it")], "done"]), name="boss", tools=[child.as_tool()])
    async with Runtime():
        result = await parent.run("go")
    assert result.children[0].bounded
    assert tool_result(result, "c1").content == "It is probably in the attic."
