"""Approvals that pause: ``@tool(requires_approval=True)`` / a policy's ``NeedsApproval``, then ``agent.resume``.

What a user relies on: the pending call does not run and the run ends ``paused`` with the calls awaiting a
decision; the step's other calls ran and are not run again; an approved call runs (its policy not asked
again), a denied one reaches the model as ``denied`` with the person's reason; the paused state is plain
data that survives pickling and a new Runtime; the resumed run counts the paused run's steps and usage.
Virtual time on both backends.
"""

from __future__ import annotations

import pickle
from typing import Any

import attrs
import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    LLMResponse,
    NeedsApproval,
    RunResult,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolContext,
    ToolStatus,
    Usage,
    tool,
)
from agentactors.loop.pause import PausedRun

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

RAN: list[str] = []
USAGE = Usage(3, 1)


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


@tool
async def balance() -> str:
    """The balance."""
    RAN.append("balance")
    return "100"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def tool_message(result: RunResult[Any], call_id: str) -> str:
    return next(m.content for m in result.messages if m.role == "tool" and m.tool_call_id == call_id)


async def test_a_call_that_needs_approval_pauses_the_run_after_the_other_calls_ran() -> None:
    model = ScriptedProvider([
        LLMResponse("", tool_calls=(ToolCall("p1", "pay", {"amount": 5}), ToolCall("b1", "balance", {})), usage=USAGE),
    ])
    rec = InMemoryRecorder()
    agent = Agent(model, name="payer", tools=[pay, balance])
    async with Runtime(recorders=[rec]):
        result = await agent.run("pay 5")
    assert result.paused and not result.ok
    assert [c.id for c in result.pending_approvals] == ["p1"]
    assert RAN == ["balance"]  # the pending call did not run; the other one did
    state = result.resume_state
    assert isinstance(state, PausedRun)
    assert state.reasons == {"p1": "the tool requires approval"} and state.step == 1 and state.agent == "payer"
    assert [r.call_id for r in state.results] == ["b1"] and state.usage == Usage(3, 1)
    assert result.messages[-1].tool_calls and result.messages[-1].role == "assistant"  # no result fed back yet
    paused = next(e for e in rec.events if e.type == "run.paused")
    assert paused.pending == [{"call_id": "p1", "name": "pay", "reason": "the tool requires approval"}]
    assert next(e for e in rec.events if e.type == "run.finished").paused is True
    finished = [e for e in rec.events if e.type == "tools.finished" and e.call_id == "p1"]
    assert finished[0].awaiting_approval is True


async def test_an_approved_call_runs_and_the_run_goes_on_in_call_order() -> None:
    model = ScriptedProvider([
        LLMResponse("", tool_calls=(ToolCall("p1", "pay", {"amount": 5}), ToolCall("b1", "balance", {})), usage=USAGE),
        LLMResponse("Paid.", usage=Usage(10, 2)),
    ])
    agent = Agent(model, name="payer", tools=[pay, balance])
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]):
        paused = await agent.run("pay 5")
        result = await agent.resume(paused, {"p1": True})
    assert result.ok and result.content == "Paid." and not result.paused
    assert RAN == ["balance", "pay 5"]  # balance is not run twice
    assert [(m.role, m.tool_call_id) for m in result.messages[2:4]] == [("tool", "p1"), ("tool", "b1")]
    assert tool_message(result, "p1") == "paid 5"
    assert result.steps == 2 and result.usage == Usage(13, 3)
    assert [c.id for c in result.tool_calls] == ["p1", "b1"]
    resumed = next(e for e in rec.events if e.type == "run.resumed")
    assert resumed.from_run_id == paused.run_id and resumed.approved == ["p1"] and resumed.denied == []
    assert result.run_id != paused.run_id
    # The model's second request carries both results, the pending one's in its place.
    second = model.requests[1].messages
    assert [m.tool_call_id for m in second if m.role == "tool"] == ["p1", "b1"]


async def test_a_denied_call_reaches_the_model_as_denied_with_the_reason() -> None:
    model = ScriptedProvider([[ToolCall("p1", "pay", {"amount": 500})], "I will not pay then."])
    rec = InMemoryRecorder()
    agent = Agent(model, name="payer", tools=[pay])
    async with Runtime(recorders=[rec]):
        paused = await agent.run("pay 500")
        result = await agent.resume(paused, {"p1": "over the limit"})
    assert result.content == "I will not pay then." and RAN == []
    text = tool_message(result, "p1")
    assert "denied" in text and "over the limit" in text
    statuses = [e.status for e in rec.events if e.type == "tools.finished" and e.call_id == "p1"]
    assert statuses[-1] is ToolStatus.denied
    false_denies = await Agent(ScriptedProvider([[ToolCall("p2", "pay", {"amount": 1})], "ok"]), tools=[pay]).run("x")
    assert false_denies.paused


async def test_a_policy_asks_for_approval_per_call_and_is_not_asked_again_once_approved() -> None:
    asked: list[str] = []

    def policy(call: ToolCall, ctx: ToolContext) -> NeedsApproval | str | None:
        asked.append(call.id)
        if call.arguments.get("amount", 0) > 100:
            return NeedsApproval("more than 100")
        return None

    @tool
    async def transfer(amount: int) -> str:
        """Transfer."""
        return f"sent {amount}"

    model = ScriptedProvider([
        [ToolCall("t1", "transfer", {"amount": 50}), ToolCall("t2", "transfer", {"amount": 500})],
        "both sent",
    ])
    agent = Agent(model, tools=[transfer], tool_policy=policy)
    paused = await agent.run("send")
    assert [c.id for c in paused.pending_approvals] == ["t2"]
    assert paused.resume_state is not None and paused.resume_state.reasons == {"t2": "more than 100"}
    result = await agent.resume(paused, {"t2": True})
    assert result.ok and tool_message(result, "t2") == "sent 500"
    assert sorted(asked) == ["t1", "t2"]  # t2 was approved by a person: the policy is not asked again


async def test_the_paused_state_pickles_and_resumes_in_a_new_runtime() -> None:
    model = ScriptedProvider([[ToolCall("p1", "pay", {"amount": 5})], "done"])
    agent = Agent(model, name="payer", tools=[pay])
    async with Runtime():
        paused = await agent.run("pay")
    state = pickle.loads(pickle.dumps(paused.resume_state))
    assert state == paused.resume_state
    async with Runtime():
        result = await agent.resume(state, {"p1": True})
    assert result.ok and RAN == ["pay 5"]


async def test_decisions_are_checked() -> None:
    agent = Agent(ScriptedProvider([[ToolCall("p1", "pay", {"amount": 5})]]), tools=[pay])
    paused = await agent.run("pay")
    with pytest.raises(ValueError, match="no decision for pending calls"):
        await agent.resume(paused, {})
    with pytest.raises(ValueError, match="not pending"):
        await agent.resume(paused, {"p1": True, "zz": True})
    with pytest.raises(TypeError, match="True, False or a reason"):
        await agent.resume(paused, {"p1": 1})  # type: ignore[dict-item]
    done = await Agent(ScriptedProvider(["hi"])).run("x")
    with pytest.raises(ValueError, match="paused RunResult"):
        await agent.resume(done, {})


async def test_a_resumed_run_may_pause_again() -> None:
    model = ScriptedProvider([
        [ToolCall("p1", "pay", {"amount": 1})],
        [ToolCall("p2", "pay", {"amount": 2})],
        "paid twice",
    ])
    agent = Agent(model, tools=[pay])
    first = await agent.run("pay twice")
    second = await agent.resume(first, {"p1": True})
    assert second.paused and [c.id for c in second.pending_approvals] == ["p2"]
    assert second.resume_state is not None and second.resume_state.step == 2
    third = await agent.resume(second, {"p2": True})
    assert third.content == "paid twice" and RAN == ["pay 1", "pay 2"] and third.steps == 3


async def test_a_run_paused_after_a_handoff_goes_on_with_the_agent_that_was_answering() -> None:
    cashier_model = ScriptedProvider([[ToolCall("p1", "pay", {"amount": 9})], "cashier: paid"])
    cashier = Agent(cashier_model, name="cashier", tools=[pay])
    front = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_cashier", {})]]), name="front", handoffs=[cashier])
    paused = await front.run("pay 9")
    assert paused.paused and paused.agent == "cashier" and paused.handoffs == ("cashier",)
    result = await front.resume(paused, {"p1": True})
    assert result.content == "cashier: paid" and result.agent == "cashier" and result.handoffs == ("cashier",)
    with pytest.raises(ValueError, match="answered by agent 'cashier'"):
        await Agent(ScriptedProvider([]), name="other", tools=[pay]).resume(paused, {"p1": True})


@attrs.frozen
class Receipt:
    amount: int


async def test_a_typed_run_pauses_on_its_tools_and_takes_its_output_after() -> None:
    model = ScriptedProvider([
        [ToolCall("p1", "pay", {"amount": 3}), ToolCall("o1", "final_result", {"amount": 3})],
    ])
    agent: Agent[Receipt] = Agent(model, tools=[pay], output_type=Receipt)
    paused = await agent.run("pay 3 and give me a receipt")
    output: Receipt | None = paused.output  # None until the run ends on an answer, though typed Receipt
    assert paused.paused and output is None
    result = await agent.resume(paused, {"p1": True})
    assert result.ok and result.output == Receipt(3) and RAN == ["pay 3"]


async def test_paused_runs_in_a_batch_are_results_like_any_other() -> None:
    agent = Agent(ScriptedProvider(lambda request: [ToolCall("p1", "pay", {"amount": 1})]), tools=[pay])
    results = await agent.run_many(["a", "b"])
    assert [r.paused for r in results] == [True, True]


def test_a_paused_run_keeps_what_ran_and_completes_in_call_order() -> None:
    from agentactors import Message, ToolResult
    from agentactors.loop.pause import any_pending
    from agentactors.tools.approval import pending_result

    calls = [ToolCall("a", "read", {}), ToolCall("b", "pay", {}), ToolCall("c", "read", {})]
    results = [
        ToolResult.of("a", "read", ToolStatus.ok, "ra"),
        pending_result("b", "pay", "the tool requires approval"),
        ToolResult.of("c", "read", ToolStatus.ok, "rc"),
    ]
    assert any_pending(results) and not any_pending(results[:1])
    state = PausedRun.of(
        "run-1", (Message.user("go"),), calls, results, step=2, usage=Usage(), tool_calls=calls,
        answer="", agent="cashier", handoffs=(), output_step=False,
    )
    assert [c.id for c in state.pending] == ["b"] and state.reasons == {"b": "the tool requires approval"}
    assert [r.call_id for r in state.results] == ["a", "c"]
    ran, done = state.completed([ToolResult.of("b", "pay", ToolStatus.ok, "paid")])
    assert [c.id for c in ran] == ["a", "b", "c"]
    assert [r.content for r in done] == ["ra", "paid", "rc"]
