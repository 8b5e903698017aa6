"""Composed agents, streamed and run without a runtime of the caller's.

``run.partial_output()`` follows the agent answering: after each handoff its values are of the new agent's
output type (a typed agent's values, a text agent's text so far), never the raw JSON text of a typed agent read
as a text answer; a resumed stream starts with the agent the run paused in.

A run that makes its own (private) runtime closes none of the providers its agents were given — its
delegated children's and its handoff targets' included (``docs/actors.md``: a private runtime never closes the
caller's provider; a runtime of the caller's closes those it started actors for).  A provider whose
``aclose()`` is final (a user's own, a pooled client) keeps working for the next run.  Both backends.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs
import pytest

from agentactors import (
    Agent,
    LLMRequest,
    LLMResponse,
    PromptedOutput,
    Runtime,
    ScriptedProvider,
    StopReason,
    ToolCall,
    tool,
)
from agentactors.agent import run as run_module
from tests.support.trickle import Trickle

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@attrs.frozen
class Ticket:
    number: int
    note: str = ""


@attrs.frozen
class Route:
    queue: str


TICKET: dict[str, Any] = {"number": 7, "note": "a refund of forty euros"}


class Said(Trickle):
    """A :class:`Trickle` that also answers an :class:`LLMResponse` as it is (text and calls in one turn)."""

    def _next(self, request: LLMRequest) -> LLMResponse:
        answer = self.answers[0]
        if isinstance(answer, LLMResponse):
            self.requests.append(request)
            self.answers.pop(0)
            return answer
        return super()._next(request)


def growing(values: list[str]) -> bool:
    return all(b.startswith(a) for a, b in itertools.pairwise(values))


# --- partial_output() follows the agent answering -----------------------------------------------------------


async def test_text_to_typed_yields_the_typed_agents_values_not_its_json_text() -> None:
    pytest.importorskip("jiter")
    # forced=False: billing answers in JSON text (the native strategy), which a text picker would yield raw.
    billing: Agent[Any] = Agent(Trickle([json.dumps(TICKET)], forced=False), name="billing", output_type=Ticket)
    triage: Agent[Any] = Agent(Trickle([ToolCall("h1", "transfer_to_billing", {})]), name="triage", handoffs=[billing])
    async with Runtime():
        async with triage.stream("refund") as run:
            values: list[Any] = [v async for v in run.partial_output()]
    assert run.result.agent == "billing"
    assert len(values) > 3, values
    assert all(isinstance(v, Ticket) for v in values), values
    assert values[-1] == run.result.output == Ticket(**TICKET)


async def test_typed_to_text_yields_the_text_agents_answer_so_far() -> None:
    support = Agent(Trickle(["your refund is on its way"]), name="support")
    triage: Agent[Any] = Agent(
        Trickle([ToolCall("h1", "transfer_to_support", {})]), name="triage", output_type=Route, handoffs=[support]
    )
    async with Runtime():
        values: list[Any] = [v async for v in triage.stream("refund").partial_output()]
    assert all(isinstance(v, str) for v in values), values
    assert len(values) > 3, values  # the answer as it grew, not only the final value
    assert growing(values) and values[-1] == "your refund is on its way"


async def test_typed_to_typed_yields_values_of_the_second_type_only() -> None:
    pytest.importorskip("jiter")
    billing: Agent[Any] = Agent(Trickle([json.dumps(TICKET)], forced=False), name="billing", output_type=Ticket)
    triage: Agent[Any] = Agent(
        Trickle([ToolCall("h1", "transfer_to_billing", {})]), name="triage", output_type=Route, handoffs=[billing]
    )
    async with Runtime():
        async with triage.stream("refund") as run:
            values: list[Any] = [v async for v in run.partial_output()]
    assert len(values) > 3 and all(isinstance(v, Ticket) for v in values), values
    assert values[-1] == run.result.output == Ticket(**TICKET)


async def test_typed_to_typed_with_the_tool_strategy_follows_the_output_tool_of_the_second() -> None:
    pytest.importorskip("jiter")
    billing: Agent[Any] = Agent(Trickle([ToolCall("o1", "final_result", TICKET)]), name="billing", output_type=Ticket)
    triage: Agent[Any] = Agent(
        Trickle([ToolCall("h1", "transfer_to_billing", {})]), name="triage", output_type=Route, handoffs=[billing]
    )
    async with Runtime():
        values: list[Any] = [v async for v in triage.stream("refund").partial_output()]
    assert len(values) > 3 and all(isinstance(v, Ticket) for v in values), values
    assert values[-1] == Ticket(**TICKET)


async def test_text_to_text_starts_the_answer_again_with_the_agent_handed_the_run() -> None:
    """What the first agent said on its way out ("let me hand you over") is not the start of the second's answer:
    the values after the handoff are the second agent's text, ending in the final value, as a text run's do."""
    support = Agent(Trickle(["your refund is on its way"]), name="support")
    triage = Agent(
        Said(
            [LLMResponse("Let me hand you over. ", (ToolCall("h1", "transfer_to_support", {}),), StopReason.tool_use)]
        ),
        name="triage",
        handoffs=[support],
    )
    async with Runtime():
        async with triage.stream("refund") as run:
            values: list[Any] = [v async for v in run.partial_output()]
    after = values[values.index("Let me hand you over. ") + 1 :]
    assert after and all(v.startswith("your") for v in after), values
    assert growing(after) and after[-1] == run.result.output == "your refund is on its way"


async def test_a_resumed_stream_starts_with_the_type_of_the_agent_it_paused_in() -> None:
    pytest.importorskip("jiter")

    @tool(requires_approval=True)
    async def refund(amount: int) -> str:
        """Refund an amount."""
        return f"refunded {amount}"

    billing: Agent[Any] = Agent(
        Trickle([ToolCall("r1", "refund", {"amount": 40}), json.dumps(TICKET)], forced=False),
        name="billing",
        tools=[refund],
        output_type=Ticket,
    )
    triage: Agent[Any] = Agent(Trickle([ToolCall("h1", "transfer_to_billing", {})]), name="triage", handoffs=[billing])
    async with Runtime():
        paused = await triage.run("refund 40")
        assert paused.paused and paused.agent == "billing"
        async with triage.resume_stream(paused, {"r1": True}) as run:
            values: list[Any] = [v async for v in run.partial_output()]
    assert len(values) > 3 and all(isinstance(v, Ticket) for v in values), values
    assert values[-1] == run.result.output == Ticket(**TICKET)


async def test_text_to_typed_with_prompted_json_yields_the_typed_agents_values() -> None:
    pytest.importorskip("jiter")
    billing = Agent(ScriptedProvider(['{"number": 7}']), name="billing", output_type=PromptedOutput(Ticket))
    triage = Agent(ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})]]), name="triage", handoffs=[billing])
    values: list[Any] = [v async for v in triage.stream("x").partial_output()]  # a private runtime too
    assert values and values[-1] == Ticket(7)
    assert all(isinstance(v, Ticket) for v in values), values


async def test_partial_output_of_a_run_that_may_be_handed_to_a_typed_agent_needs_jiter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without jiter a typed agent's partial values cannot be followed: said when ``partial_output()`` is called, as
    for a typed agent answering first — not a stream that silently has no partial values after the handoff."""
    monkeypatch.setattr(run_module, "jiter_available", lambda: False)
    billing: Agent[Any] = Agent(ScriptedProvider([]), name="billing", output_type=Ticket)
    triage = Agent(ScriptedProvider([]), name="triage", handoffs=[billing])
    with pytest.raises(ImportError, match="jiter"):
        triage.stream("x").partial_output()
    text_only = Agent(ScriptedProvider([]), name="triage", handoffs=[Agent(ScriptedProvider([]), name="support")])
    values = [v async for v in text_only.stream("x").partial_output()]  # no typed agent anywhere: no jiter needed
    assert values == []  # (its model had nothing to say: the run failed)


# --- a private runtime closes none of the providers its agents were given -----------------------------------


class FinalProvider(ScriptedProvider):
    """A provider whose ``aclose()`` is final (a user's own provider, a pooled client): a call after it fails."""

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.closed:
            raise RuntimeError("this provider was closed for good")
        return await super().complete(request)

    def stream(self, request: LLMRequest) -> Any:
        if self.closed:
            raise RuntimeError("this provider was closed for good")
        return super().stream(request)


def delegating(child: Agent[Any], runs: int) -> ScriptedProvider:
    """A parent's model: each run asks the child once, then answers."""
    return ScriptedProvider(
        [item for i in range(runs) for item in ([ToolCall(f"d{i}", "researcher", {"input": "look"})], f"done {i}")]
    )


async def test_a_delegated_childs_provider_is_not_closed_by_its_parents_private_runtime() -> None:
    child_provider = FinalProvider(["found 0", "found 1"])
    child = Agent(child_provider, name="researcher")
    parent = Agent(delegating(child, 2), tools=[child.as_tool()])
    assert Runtime.current() is None
    first = await parent.run("q")
    assert first.ok and first.children[0].content == "found 0"
    assert not child_provider.closed
    second = await parent.run("q")  # the child's provider still answers
    assert second.ok and second.children[0].content == "found 1", second.children[0].error
    assert child._bound == {} and parent._bound == {}  # nothing cached for the runtimes that are gone


async def test_a_provider_shared_by_parent_and_child_is_not_closed_and_has_one_actor_in_the_private_runtime() -> None:
    provider = FinalProvider([])
    child = Agent(provider, name="researcher")
    parent = Agent(provider, tools=[child.as_tool()])
    actors: list[list[str]] = []

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if request.tools and last.role == "user":
            return [ToolCall("d", "researcher", {"input": "look"})]
        if not request.tools:
            rt = Runtime.current()
            assert rt is not None
            actors.append([ref.name for ref in rt._actors if ref.name.startswith("provider")])
            return "found"
        return "done"

    provider.extend([model] * 6)
    for _ in range(2):
        result = await parent.run("q")
        assert result.ok and result.content == "done", result.error
    assert not provider.closed
    assert all(len(names) == 1 for names in actors), actors  # one ProviderActor, one budget, as in a runtime


async def test_a_handoff_targets_provider_is_not_closed_by_a_private_runtime() -> None:
    billing_provider = FinalProvider(["billed 0", "billed 1"])
    billing = Agent(billing_provider, name="billing")
    triage = Agent(
        ScriptedProvider([[ToolCall("h1", "transfer_to_billing", {})], [ToolCall("h2", "transfer_to_billing", {})]]),
        name="triage",
        handoffs=[billing],
    )
    assert (await triage.run("q")).content == "billed 0"
    async with triage.stream("q") as run:
        await run.wait()
    assert run.result.content == "billed 1", run.result.error
    assert not billing_provider.closed


async def test_the_handoff_target_of_a_delegated_child_is_not_closed_by_a_private_runtime() -> None:
    closer_provider = FinalProvider(["closed 0", "closed 1"])
    closer = Agent(closer_provider, name="closer")
    child = Agent(
        ScriptedProvider([[ToolCall(f"h{i}", "transfer_to_closer", {})] for i in range(2)]),
        name="researcher",
        handoffs=[closer],
    )
    parent = Agent(delegating(child, 2), tools=[child.as_tool()])
    for i in range(2):
        result = await parent.run("q")
        assert result.ok and result.children[0].content == f"closed {i}", result.children[0].error
    assert not closer_provider.closed


async def test_a_runtime_of_the_callers_still_closes_the_providers_it_started_actors_for() -> None:
    child_provider = FinalProvider(["found 0"])
    child = Agent(child_provider, name="researcher")
    parent = Agent(delegating(child, 1), tools=[child.as_tool()])
    async with Runtime():
        assert (await parent.run("q")).ok
        assert not child_provider.closed
    assert child_provider.closed
