"""Agents composed, adversarially: delegation (an agent as another's tool, its run a child run) and handoffs.

What a user relies on when composition goes wrong: a bad ``as_tool``/``handoff`` argument is a clear
``TypeError``/``ValueError`` when it is made; a child that raises, is cancelled or pauses leaves nothing live
and its spend counted in its parent's result once; cycles of delegation end at a bound with a typed refusal;
a handoff's ``input_filter`` that raises or returns garbage says which handoff it was; after a handoff the run
is the target's — its settings, tools and output type — in streamed, resumed and child runs alike; and events
name the run (and the parent run) that produced each step.  Virtual time on both backends.
"""

from __future__ import annotations

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
    Message,
    ModelSettings,
    ProviderError,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolChoice,
    ToolContext,
    ToolStatus,
    Usage,
    handoff,
    tool,
)
from agentactors.agent import AgentTool
from agentactors.loop import lineage
from agentactors.loop.live import live_runs

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def ask(call_id: str, tool_name: str, text: str) -> ToolCall:
    return ToolCall(call_id, tool_name, {"input": text})


def tool_result(result: Any, call_id: str) -> Any:
    return next(m for m in result.messages if m.role == "tool" and m.tool_call_id == call_id)


def paired(events: list[Any]) -> bool:
    """Every run that started finished, once."""
    started = sorted(e.run_id for e in events if e.type == "run.started")
    finished = sorted(e.run_id for e in events if e.type == "run.finished")
    return started == finished and len(set(started)) == len(started)


# --- bad arguments, refused when made ------------------------------------------------------------------------


def test_as_tool_refuses_a_name_that_is_not_a_str_with_a_type_error() -> None:
    child = Agent(ScriptedProvider([]), name="searcher")
    with pytest.raises(TypeError, match="name must be a str"):
        child.as_tool(name=123)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_depth"):
        child.as_tool(max_depth=2.0)  # type: ignore[arg-type]


def test_as_tool_of_an_agent_whose_name_makes_no_tool_name_says_so_and_asks_for_name() -> None:
    """A name of letters no tool name may hold (``"客服"``) made the tool name ``''``: the error named the empty tool
    name, not the agent, nor the way out."""
    support = Agent(ScriptedProvider([]), name="客服")
    with pytest.raises(ValueError, match=r"agent name '客服' .*as_tool\(name=") as caught:
        support.as_tool()
    assert "''" not in str(caught.value)
    assert support.as_tool(name="support").name == "support"


def test_as_tool_refuses_a_max_depth_deeper_than_any_run_may_nest() -> None:
    """``max_depth=20`` promised twenty levels; every run deeper than ``lineage.MAX_DEPTH`` is refused anyway."""
    child = Agent(ScriptedProvider([]), name="searcher")
    assert child.as_tool(max_depth=lineage.MAX_DEPTH).max_depth == lineage.MAX_DEPTH
    with pytest.raises(ValueError, match=f"at most {lineage.MAX_DEPTH}"):
        child.as_tool(max_depth=lineage.MAX_DEPTH + 1)


def test_an_agent_tool_needs_something_it_can_run() -> None:
    """``AgentTool(obj)`` of an object without ``run`` failed at the first call, as an ``AttributeError`` the
    calling model read; a str (an agent's name, as handoffs take) is no agent here."""
    with pytest.raises(TypeError, match="an Agent"):
        AgentTool(object(), name="x")
    with pytest.raises(TypeError, match="an Agent"):
        AgentTool("searcher")


def test_a_handoff_refuses_an_async_input_filter() -> None:
    """The filter is called synchronously: an async one returned a coroutine, which failed at the handoff as
    ``'coroutine' object is not iterable`` (with a never-awaited warning)."""
    billing = Agent(ScriptedProvider([]), name="billing")

    async def last_user(messages: tuple[Message, ...]) -> list[Message]:
        return list(messages[-1:])

    with pytest.raises(TypeError, match="plain function"):
        handoff(billing, input_filter=last_user)  # type: ignore[arg-type]


def test_a_handoff_to_something_that_is_not_an_agent_is_refused_when_made() -> None:
    """An object with a ``name`` but no agent behind it was accepted, and the run failed at its start with
    "handoffs name agents that ... cannot reach"."""

    @attrs.frozen
    class Named:
        name: str

    with pytest.raises(TypeError, match="an Agent or the name of one"):
        handoff(Named("billing"))
    assert handoff("billing").target_name == "billing"


# --- the handoff's input_filter misbehaving -------------------------------------------------------------------


def _triage(billing: Agent[Any], input_filter: Any) -> Agent[Any]:
    return Agent(
        ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]),
        name="triage",
        handoffs=[handoff(billing, input_filter=input_filter)],
    )


async def test_an_input_filter_that_raises_is_named_in_the_error() -> None:
    """The filter's own exception goes out of the run (it is the caller's bug), with a note saying which handoff's
    filter raised; the run's events are paired and nothing of it stays live."""

    def broken(messages: tuple[Message, ...]) -> list[Message]:
        raise KeyError("tenant")

    billing = Agent(ScriptedProvider(["never"]), name="billing")
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        with pytest.raises(KeyError) as caught:
            await _triage(billing, broken).run("x")
        assert dict(live_runs(rt)) == {} and rt.stats().busy == 0
    assert any("input_filter of the handoff to 'billing'" in note for note in getattr(caught.value, "__notes__", ()))
    assert paired(rec.events)


@pytest.mark.parametrize("garbage", [None, 5, {"role": "user"}, b"bytes", "text"])
async def test_an_input_filter_that_returns_no_sequence_of_messages_is_a_clear_type_error(garbage: Any) -> None:
    billing = Agent(ScriptedProvider(["never"]), name="billing")
    with pytest.raises(TypeError, match=r"handoff to 'billing': its input_filter must return a sequence of Messages"):
        await _triage(billing, lambda messages: garbage).run("x")


async def test_an_input_filter_may_return_any_iterable_of_messages() -> None:
    billing_model = ScriptedProvider(["billing here"])
    billing = Agent(billing_model, name="billing")
    result = await _triage(billing, lambda messages: (m for m in messages if m.role == "user")).run("my invoice?")
    assert result.ok and billing_model.requests[0].messages == (Message.user("my invoice?"),)


# --- delegation: bad input from the model, failed and cancelled children ----------------------------------------


async def test_a_blank_input_is_sent_back_to_the_model_without_starting_a_child() -> None:
    """An empty prompt is a request every vendor does not take (Anthropic refuses an empty text block): the child
    ran, spent nothing useful, and the parent's model read a vendor's refusal instead of what to fix."""
    child_model = ScriptedProvider(["never"])
    child = Agent(child_model, name="searcher")
    parent = Agent(
        ScriptedProvider([[ask("c1", "searcher", "   ")], "gave up"]), name="boss", tools=[child.as_tool()]
    )
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await parent.run("go")
    assert child_model.calls == 0 and result.children == ()
    text = tool_result(result, "c1").content
    assert "`input` is empty" in text
    finished = next(e for e in rec.events if e.type == "tools.finished" and e.call_id == "c1")
    assert finished.status is ToolStatus.error


@tool
async def wait() -> str:
    """Wait for something."""
    return "waited"


def _child_that_answers_then_hangs(started: anyio.Event) -> Agent[Any]:
    """A child whose first model call answers (and is paid for), whose second never returns."""
    calls = 0

    async def model(request: LLMRequest) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            return LLMResponse("", tool_calls=(ToolCall("w1", "wait", {}),), usage=Usage(100, 5))
        started.set()
        await anyio.sleep_forever()

    return Agent(ScriptedProvider(model), name="kid", tools=[wait])


PARENT_USAGE = Usage(10, 1) + Usage(10, 1)
CHILD_USAGE = Usage(100, 5)


def _parent(tools: list[Any], call: ToolCall) -> Agent[Any]:
    return Agent(
        ScriptedProvider([
            LLMResponse("", tool_calls=(call,), usage=Usage(10, 1)),
            LLMResponse("done", usage=Usage(10, 1)),
        ]),
        name="boss",
        tools=tools,
    )


_NOT_ADOPTED = (
    "needs agentactors/loop/controller.py: LoopController._adopted adopts only a child that returned; one that "
    "raised or was cancelled must be adopted too (its state's result), see the report"
)


async def test_a_child_that_raises_after_its_model_answered_still_counts_in_the_parents_usage() -> None:
    @tool
    async def boom() -> str:
        """Fail."""
        raise RuntimeError("kaboom")

    child = Agent(
        ScriptedProvider([LLMResponse("", tool_calls=(ToolCall("b1", "boom", {}),), usage=CHILD_USAGE)]),
        name="kid",
        tools=[boom],
        on_tool_status={ToolStatus.error: "raise"},
    )
    parent = _parent([child.as_tool()], ask("c1", "kid", "x"))
    async with Runtime():
        result = await parent.run("go")
    assert tool_result(result, "c1").content.startswith("Error: ToolStatusError")
    assert result.usage == PARENT_USAGE + CHILD_USAGE  # what the child spent, counted once
    (kid,) = result.children
    assert kid.error is not None and kid.usage == CHILD_USAGE


async def test_a_child_cancelled_by_its_tools_timeout_still_counts_in_the_parents_usage() -> None:
    """A plain tool with a timeout that awaits ``agent.run``: the timeout cancels the child after its first model
    call was paid for."""
    child = _child_that_answers_then_hangs(anyio.Event())

    @tool(timeout=5)
    async def research(q: str) -> str:
        """Research."""
        return (await child.run(q)).content

    parent = _parent([research], ToolCall("c1", "research", {"q": "x"}))
    async with Runtime() as rt:
        result = await parent.run("go")
        assert dict(live_runs(rt)) == {}
    assert "timed out" in tool_result(result, "c1").content
    assert result.usage == PARENT_USAGE + CHILD_USAGE
    assert result.children[0].cancelled


async def test_a_child_cancelled_through_its_handle_counts_once_in_the_parents_usage() -> None:
    started = anyio.Event()
    child = _child_that_answers_then_hangs(started)
    parent = _parent([child.as_tool()], ask("c1", "kid", "x"))
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt, anyio.create_task_group() as tg:

        async def cancel_the_child() -> None:
            await started.wait()
            child_id = next(e.run_id for e in rec.events if e.type == "run.started" and e.parent_run_id is not None)
            assert child_id is not None
            rt.run_ref(child_id).cancel()

        tg.start_soon(cancel_the_child)
        result = await parent.run("go")
    (kid,) = result.children
    assert kid.cancelled and kid.usage == CHILD_USAGE
    assert result.usage == PARENT_USAGE + CHILD_USAGE
    assert paired(rec.events)


@pytest.mark.parametrize("how", ["scope", "stream", "run_ref"])
async def test_cancelling_the_parent_cancels_every_child_and_leaves_nothing_live(how: str) -> None:
    started = 0
    all_started = anyio.Event()

    async def slow(request: LLMRequest) -> str:
        nonlocal started
        started += 1
        if started == 5:
            all_started.set()
        await anyio.sleep_forever()
        return "never"

    child = Agent(ScriptedProvider(slow), name="slow")
    parent = Agent(
        ScriptedProvider([[ask(f"c{i}", "slow", "x") for i in range(5)], "done"]),
        name="boss",
        tools=[child.as_tool()],
    )
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        if how == "scope":
            async with anyio.create_task_group() as tg:
                tg.start_soon(parent.run, "go")
                await all_started.wait()
                tg.cancel_scope.cancel()
        elif how == "stream":
            async with parent.stream("go") as run:
                await all_started.wait()
                run.cancel()
                assert (await run.wait()).cancelled
        else:
            async with anyio.create_task_group() as tg:

                async def cancel_the_parent() -> None:
                    await all_started.wait()
                    parent_id = next(
                        e.run_id for e in rec.events if e.type == "run.started" and e.parent_run_id is None
                    )
                    assert parent_id is not None
                    rt.run_ref(parent_id).cancel()

                tg.start_soon(cancel_the_parent)
                assert (await parent.run("go")).cancelled
        assert dict(live_runs(rt)) == {}
        stats = rt.stats()
        assert stats.busy == 0 and stats.tasks == 0
    assert paired(rec.events)
    children = {e.run_id for e in rec.events if e.type == "run.started" and e.parent_run_id is not None}
    assert len(children) == 5
    assert all(e.data.get("cancelled") for e in rec.events if e.type == "run.finished" and e.run_id in children)


async def test_many_children_at_once_each_answer_their_own_call() -> None:
    child = Agent(ScriptedProvider(lambda request: f"answer to {request.messages[-1].content}"), name="kid")
    calls = [ask(f"c{i}", "kid", f"q{i}") for i in range(200)]
    parent = Agent(ScriptedProvider([calls, "done"]), name="boss", tools=[child.as_tool()])
    async with Runtime() as rt:
        result = await parent.run("go")
        assert rt.stats().busy == 0 and dict(live_runs(rt)) == {}
    assert len(result.children) == 200
    for i in range(200):
        assert tool_result(result, f"c{i}").content.startswith(f"answer to q{i}")


# --- cycles: A -> A, A -> B -> A ---------------------------------------------------------------------------------


async def test_a_delegation_cycle_ends_at_its_bound_with_a_denied_call_never_a_recursion_error() -> None:
    """A asks B, B asks A (late-bound: agents are immutable), for ever: the chain ends at ``max_depth`` with a
    ``denied`` call the deepest model reads, every level answers, and the whole tree is in the results."""
    tools: dict[str, AgentTool] = {}

    def model(other: str) -> Any:
        def answer(request: LLMRequest) -> Any:
            last = request.messages[-1]
            if last.role == "tool":
                return f"{other} said: {last.content[:60]}"
            return [ask(f"to-{other}-{len(request.messages)}", other, "and you?")]

        return answer

    @tool(name="b")
    async def ask_b(input: str, ctx: ToolContext) -> Any:
        """Ask B."""
        return await tools["b"].fn(input, ctx)

    @tool(name="a")
    async def ask_a(input: str, ctx: ToolContext) -> Any:
        """Ask A."""
        return await tools["a"].fn(input, ctx)

    a = Agent(ScriptedProvider(model("b")), name="a", tools=[ask_b])
    b = Agent(ScriptedProvider(model("a")), name="b", tools=[ask_a])
    tools["a"], tools["b"] = a.as_tool(max_depth=3), b.as_tool(max_depth=3)
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        result = await a.run("start")
        assert dict(live_runs(rt)) == {}
    assert result.ok
    depths = sorted(e.depth for e in rec.events if e.type == "run.started" and e.parent_run_id is not None)
    assert depths == [1, 2, 3]
    denied = [e for e in rec.events if e.type == "tools.finished" and e.status is ToolStatus.denied]
    assert len(denied) == 1
    assert "RecursionError" not in repr([e.data for e in rec.events])
    assert paired(rec.events)
    # The chain, each run its parent's: a -> b -> a -> b.
    chain = [result]
    while chain[-1].children:
        (only,) = chain[-1].children
        chain.append(only)
    assert [r.agent for r in chain] == ["a", "b", "a", "b"]


# --- handoffs: the seat after one, and where the run is ------------------------------------------------------------


@tool
async def triage_note(text: str) -> str:
    """Note something."""
    return "noted"


@attrs.frozen
class Ticket:
    number: int


async def test_after_a_handoff_the_run_has_the_targets_settings_tools_and_output_type_not_a_mix() -> None:
    billing_model = ScriptedProvider([ToolCall("o1", "final_result", {"number": 7})])
    billing: Agent[Any] = Agent(
        billing_model, name="billing", settings=ModelSettings(max_tokens=50), output_type=Ticket
    )
    triage_model = ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]])
    triage = Agent(
        triage_model,
        name="triage",
        settings=ModelSettings(temperature=0.1),
        tools=[triage_note],
        handoffs=[billing],
        tool_choice=ToolChoice.required(),
    )
    result: Any = await triage.run("x", settings=ModelSettings(top_p=0.5))
    first, second = triage_model.requests[0], billing_model.requests[0]
    assert (first.temperature, first.max_tokens, first.top_p) == (0.1, None, 0.5)
    assert (second.temperature, second.max_tokens, second.top_p) == (None, 50, 0.5)  # the run's settings still win
    assert [t.name for t in second.tools] == ["final_result"]  # billing's: neither triage's tool nor its handoff
    assert second.tool_choice.mode != "required" or second.tool_choice.name == "final_result"
    assert result.output == Ticket(7) and result.agent == "billing"


async def test_a_typed_agent_handing_off_to_a_text_agent_answers_in_text() -> None:
    billing = Agent(ScriptedProvider(["forty euros"]), name="billing")
    triage: Agent[Any] = Agent(
        ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]),
        name="triage",
        output_type=Ticket,
        handoffs=[billing],
    )
    result = await triage.run("x")
    assert result.ok and result.output == "forty euros" and result.agent == "billing"


async def test_a_handoff_to_an_agent_whose_provider_fails_fails_as_that_agent() -> None:
    broken = ProviderError("down", provider="vendor", kind=ErrorKind.account, status=402)
    billing = Agent(ScriptedProvider([broken]), name="billing")
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await triage.run("x")
    assert result.generation_failed and isinstance(result.error, ProviderError)
    assert result.agent == "billing" and result.handoffs == ("billing",)
    finished = next(e for e in rec.events if e.type == "run.finished")
    assert finished.final_agent == "billing"


async def test_a_handoff_inside_a_child_run_is_the_childs_and_its_events_name_both_runs() -> None:
    billing = Agent(ScriptedProvider(["billing says 40"]), name="billing")
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    parent = Agent(ScriptedProvider([[ask("c1", "triage", "invoice?")], "done"]), name="boss", tools=[triage.as_tool()])
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await parent.run("go")
    (kid,) = result.children
    assert tool_result(result, "c1").content == "billing says 40"
    assert (kid.agent, kid.handoffs) == ("billing", ("billing",))
    assert result.agent == "boss" and result.handoffs == ()
    (moved,) = [e for e in rec.events if e.type == "agent.handoff"]
    assert (moved.run_id, moved.parent_run_id) == (kid.run_id, result.run_id)
    # Every model call after the handoff is the child's, answered by billing's provider.
    after = [e for e in rec.events if e.type == "llm.request" and e.run_id == kid.run_id]
    assert len(after) == 2 and all(e.parent_run_id == result.run_id for e in after)


async def test_a_child_that_fails_after_a_handoff_says_which_agent_failed() -> None:
    """The parent's model (and whoever reads its conversation) read "agent 'triage' did not answer": the failure was
    billing's, after triage handed the child run over."""
    broken = ProviderError("down", provider="vendor", kind=ErrorKind.account, status=402)
    billing = Agent(ScriptedProvider([broken]), name="billing")
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    parent = Agent(
        ScriptedProvider([[ask("c1", "triage", "invoice?")], "sorry"]), name="boss", tools=[triage.as_tool()]
    )
    async with Runtime():
        result = await parent.run("go")
    text = tool_result(result, "c1").content
    assert text.startswith("Error: DelegationError: agent 'triage' did not answer: ProviderError")
    assert "after a handoff to agent 'billing'" in text
    assert result.children[0].agent == "billing"


async def test_a_handoff_loop_in_a_streamed_run_ends_bounded_with_its_events_in_the_stream() -> None:
    ping_model = ScriptedProvider(lambda request: [ToolCall(f"p{len(request.messages)}", "transfer_to_pong", {})])
    pong_model = ScriptedProvider(lambda request: [ToolCall(f"q{len(request.messages)}", "transfer_to_ping", {})])
    pong = Agent(pong_model, name="pong", handoffs=["ping"])
    ping = Agent(ping_model, name="ping", max_steps=4, handoffs=[pong])
    async with Runtime() as rt:
        async with ping.stream("go") as run:
            events = [e async for e in run]
        assert dict(live_runs(rt)) == {}
    result = run.result
    assert result.bounded and result.steps == 4 and result.handoffs == ("pong", "ping", "pong", "ping")
    moves = [(e.from_agent, e.to_agent) for e in events if e.type == "agent.handoff"]
    assert moves == [("ping", "pong"), ("pong", "ping"), ("ping", "pong"), ("pong", "ping")]
    assert len({e.run_id for e in events}) == 1


async def test_a_resumed_stream_goes_on_in_the_agent_it_paused_in_and_hands_off_from_there() -> None:
    @tool(requires_approval=True)
    async def refund(amount: int) -> str:
        """Refund an amount."""
        return f"refunded {amount}"

    closer = Agent(ScriptedProvider(["closed"]), name="closer")
    billing = Agent(
        ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})], [ToolCall("h2", "transfer_to_closer", {})]]),
        name="billing",
        tools=[refund],
        handoffs=[closer],
    )
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    async with Runtime():
        paused = await triage.run("refund 5")
        assert paused.paused and paused.agent == "billing"
        async with triage.resume_stream(paused, {"r1": True}) as run:
            events = [e async for e in run]
    result = run.result
    assert result.ok and result.content == "closed"
    assert (result.agent, result.handoffs) == ("closer", ("billing", "closer"))
    (moved,) = [e for e in events if e.type == "agent.handoff"]
    assert (moved.from_agent, moved.to_agent, moved.run_id) == ("billing", "closer", result.run_id)


# --- spend, counted once; a child waiting for a person --------------------------------------------------------------


async def test_a_grandchilds_cost_reaches_the_top_once_in_the_result_and_once_in_the_budget() -> None:
    """Each run's cost is its own and its children's (theirs hold their own): summed once at every level, and each
    model call charged once to the budget the whole tree spends from."""
    from agentactors import CostBudget
    from agentactors.pricing import Price, clear_prices, set_price

    clear_prices()
    set_price("openai", "gpt-4o", Price(2.5, 10.0))
    try:
        step = Usage(10_000, 1_000)

        def priced(answer: str, delegate_to: str | None = None) -> ScriptedProvider:
            def model(request: LLMRequest) -> LLMResponse:
                if delegate_to is not None and request.messages[-1].role != "tool":
                    return LLMResponse(tool_calls=(ask("d", delegate_to, "go on"),), usage=step)
                return LLMResponse(answer, usage=step)

            return ScriptedProvider(model, name="openai", model="gpt-4o")

        grandchild = Agent(priced("leaf"), name="leaf")
        child = Agent(priced("middle", "leaf"), name="middle", tools=[grandchild.as_tool()])
        top = Agent(priced("top", "middle"), name="top", tools=[child.as_tool()])
        budget = CostBudget(10.0)
        async with Runtime():
            result = await top.run("go", cost_limit=budget)
        one = 10_000 * 2.5 / 1e6 + 1_000 * 10.0 / 1e6
        (middle,) = result.children
        (leaf,) = middle.children
        assert leaf.cost is not None and leaf.cost.total == pytest.approx(one)
        assert middle.cost is not None and middle.cost.total == pytest.approx(3 * one)
        assert result.cost is not None and result.cost.total == pytest.approx(5 * one)
        assert result.usage == Usage(50_000, 5_000)
        assert budget.spent == pytest.approx(5 * one) and budget.calls == 5
    finally:
        clear_prices()


async def test_a_child_waiting_in_place_for_a_person_is_approved_through_its_own_run_id() -> None:
    """``approval="wait"`` in a child: its run stays live (the parent's model waits for its answer), found by the id
    its events carry; approving it there lets the child, then the parent, answer."""

    @tool(requires_approval=True, approval="wait")
    async def refund(amount: int) -> str:
        """Refund an amount."""
        return f"refunded {amount}"

    waiting = anyio.Event()

    class Watch:
        def __init__(self) -> None:
            self.events: list[Any] = []

        def record(self, event: Any) -> None:
            self.events.append(event)
            if event.type == "run.awaiting_approval":
                waiting.set()

    child = Agent(
        ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})], "refund done"]),
        name="cashier",
        tools=[refund],
    )
    parent = Agent(
        ScriptedProvider([[ask("c1", "cashier", "refund 5")], "all set"]), name="boss", tools=[child.as_tool()]
    )
    watch = Watch()
    async with Runtime(recorders=[watch]) as rt, anyio.create_task_group() as tg:

        async def approve() -> None:
            await waiting.wait()
            child_id = next(e.run_id for e in watch.events if e.type == "run.started" and e.parent_run_id is not None)
            assert child_id is not None
            await rt.run_ref(child_id).approve("r1")

        tg.start_soon(approve)
        result = await parent.run("go")
    assert result.content == "all set" and tool_result(result, "c1").content == "refund done"
    assert result.children[0].content == "refund done"


async def test_a_child_stopped_by_its_parents_deadline_is_kept_with_what_it_spent() -> None:
    """The parent's deadline is the child's (one ticket): the cancellation that ends both leaves the child's frame as
    the parent's, so the child raises it instead of returning — and its model call was lost from the parent's
    usage."""
    from agentactors import RunDeadlineExceeded

    child = _child_that_answers_then_hangs(anyio.Event())
    parent = _parent([child.as_tool()], ask("c1", "kid", "x"))
    async with Runtime() as rt:
        result = await parent.run("go", deadline=5.0)
        assert dict(live_runs(rt)) == {} and rt.stats().busy == 0
    assert isinstance(result.error, RunDeadlineExceeded)
    (kid,) = result.children
    assert (kid.cancelled or isinstance(kid.error, RunDeadlineExceeded)) and kid.usage == CHILD_USAGE
    assert result.usage == Usage(10, 1) + CHILD_USAGE  # the parent's one call, and the child's


# --- tracing an answer back: events and explain ----------------------------------------------------------------------


async def test_a_run_cancelled_through_its_handle_says_so_in_its_run_finished() -> None:
    started = anyio.Event()
    child = _child_that_answers_then_hangs(started)
    parent = _parent([child.as_tool()], ask("c1", "kid", "x"))
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt, anyio.create_task_group() as tg:

        async def cancel_the_parent() -> None:
            await started.wait()
            parent_id = next(e.run_id for e in rec.events if e.type == "run.started" and e.parent_run_id is None)
            assert parent_id is not None
            rt.run_ref(parent_id).cancel()

        tg.start_soon(cancel_the_parent)
        result = await parent.run("go")
    assert result.cancelled
    finished = next(e for e in rec.events if e.type == "run.finished" and e.run_id == result.run_id)
    assert finished.data.get("cancelled") is True


async def test_explain_names_the_agent_that_answered_after_a_handoff() -> None:
    from agentactors import explain

    billing = Agent(ScriptedProvider(["billing says 40"]), name="billing")
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        result = await triage.run("invoice?")
    explanation = explain(result, rec.events)
    assert explanation.agent == "billing"
    assert any("triage" in line and "billing" in line for line in explanation.timeline)


async def test_partial_output_after_a_handoff_to_a_typed_agent_yields_values_of_its_type_only() -> None:
    from agentactors import PromptedOutput

    pytest.importorskip("jiter")
    billing = Agent(ScriptedProvider(['{"number": 7}']), name="billing", output_type=PromptedOutput(Ticket))
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    async with Runtime():
        values: list[Any] = [v async for v in triage.stream("x").partial_output()]
    assert values and values[-1] == Ticket(7)
    assert all(isinstance(v, Ticket) for v in values), values  # not '{"number": ', then a Ticket
