"""Every way a run can go, event by event: the record, the result and the requests the step layers keep.

The other loop tests pin one rule each; these pin whole runs — which events each kind of step emits
and with which fields, in which order, what each ending puts in the result (content, messages,
served_by, usage, flags) and where the tool choice changes — so a change to how the controller is
cut into layers cannot move any of it unnoticed.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.agent.core import Agent
from agentactors.errors import ErrorKind, ProviderError, ToolStatusError
from agentactors.events import Event, InMemoryRecorder
from agentactors.loop.nudges import CONTINUE_NOTE
from agentactors.messages import LLMRequest, LLMResponse, Message, ToolCall, ToolChoice, Usage
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool
from agentactors.tools.results import ToolStatus

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def _plain(value: Any) -> Any:
    if isinstance(value, LLMRequest):
        return "<request>"
    if isinstance(value, LLMResponse):
        return f"<response from {value.provider}>"
    if isinstance(value, BaseException):
        return type(value).__name__
    return value


def _shape(event: Event) -> tuple[Any, ...]:
    """An event without its run id, seq and time."""
    return (event.type, event.step, {k: _plain(v) for k, v in event.data.items()})


def _record(rec: InMemoryRecorder) -> list[tuple[Any, ...]]:
    """The run's events; the executor's ``tools.*`` events of one step become one entry of their sorted
    types (they are the executor's own, and concurrent calls interleave them in any order)."""
    out: list[tuple[Any, ...]] = []
    for event in rec.events:
        if not event.type.startswith("tools."):
            out.append(_shape(event))
        elif out and out[-1][0] == "tools":
            out[-1] = ("tools", event.step, tuple(sorted((*out[-1][2], event.type))))
        else:
            out.append(("tools", event.step, (event.type,)))
    return out


def _generation(step: int, provider: str, usage: Usage) -> list[tuple[Any, ...]]:
    return [
        ("step.started", step, {}),
        ("llm.request", step, {"request": "<request>"}),
        # (cost: None, every provider here is unpriced; agentactors.pricing)
        ("llm.response", step, {"response": f"<response from {provider}>", "provider": provider, "usage": usage,
                                "cost": None}),
    ]


def _tools(step: int, n: int) -> list[tuple[Any, ...]]:
    return [("tools", step, ("tools.finished",) * n + ("tools.started",) * n)]


async def test_think_tool_think_nudged_think_answer() -> None:
    # Every kind of answer step in one run; the streak of think-only steps restarts at a tool step
    # and at a nudged acknowledgment (max_empty_steps=2 would otherwise end it at step 3 or 5).
    calls = (ToolCall("f1", "suggest_followups", {"suggestions": ["More?"]}), ToolCall("c1", "lookup", {"key": "a"}))
    script = [
        LLMResponse("<think>planning</think>", provider="p1", usage=Usage(1, 1)),
        LLMResponse("<think>x</think>Looking it up.", calls, provider="p2", usage=Usage(2, 1)),
        LLMResponse("Let me think.", provider="p3", usage=Usage(3, 1)),
        LLMResponse("Sure, I can help with that!", provider="p4", usage=Usage(4, 1)),
        LLMResponse("", provider="p5", usage=Usage(5, 1)),
        LLMResponse("<think>done</think>a is value-of-a.", provider="p6", usage=Usage(6, 1)),
    ]
    provider = ScriptedProvider(script)
    rec = InMemoryRecorder()
    agent = Agent(provider, tools=[lookup], followups=True, max_empty_steps=2, recorders=[rec], name="pin")
    result = await agent.run("q")

    think_only = {"think_only": True, "tool_calls": 0}
    assert _record(rec) == [
        ("run.started", None, {"agent": "pin", "messages": 1, "native_tools": True}),
        *_generation(1, "p1", Usage(1, 1)),
        ("step.finished", 1, think_only),
        *_generation(2, "p2", Usage(2, 1)),
        *_tools(2, 2),
        ("step.finished", 2, {"tool_calls": 2, "routed": None}),
        *_generation(3, "p3", Usage(3, 1)),
        ("step.finished", 3, think_only),
        *_generation(4, "p4", Usage(4, 1)),
        ("step.finished", 4, {"tool_calls": 0, "nudged": True}),
        *_generation(5, "p5", Usage(5, 1)),
        ("step.finished", 5, think_only),
        *_generation(6, "p6", Usage(6, 1)),
        ("step.finished", 6, {"tool_calls": 0}),
        (
            "run.finished",
            None,
            {
                "content": "a is value-of-a.",
                "steps": 6,
                "bounded": False,
                "generation_failed": False,
                "error": None,
                "served_by": "p6",
                "usage": Usage(21, 6),
                "cost": None,  # scripted: no price
                "tool_calls": 2,
            },
        ),
    ]
    assert [e.request for e in rec.of_type("llm.request")] == provider.requests

    assert result.content == "a is value-of-a."
    assert result.steps == 6 and not result.bounded and result.ok
    assert result.served_by == "p6"
    assert result.usage == Usage(21, 6)
    assert result.followups == ("More?",)
    assert result.tool_calls == calls
    assert [(m.role, m.tool_call_id) for m in result.messages] == [
        ("user", None), ("assistant", None), ("tool", "f1"), ("tool", "c1"), ("assistant", None)
    ]
    assert result.messages[1] == Message.assistant("Looking it up.", calls)
    # The acknowledgment is dropped; the note rides on the last result from the next request on.
    assert result.messages[3].content == "value-of-a\n\n" + CONTINUE_NOTE
    assert provider.requests[3].messages[-1].content == "value-of-a"
    assert provider.requests[4].messages[-1].content == "value-of-a\n\n" + CONTINUE_NOTE
    assert provider.requests[5].messages == provider.requests[4].messages


async def test_think_only_steps_after_a_tool_step_end_bounded_served_by_the_last() -> None:
    script = [
        LLMResponse("Partial: checking a.", (ToolCall("c1", "lookup", {"key": "a"}),), provider="p1"),
        LLMResponse("<think>hm</think>", provider="p2"),
        LLMResponse("", provider="p3"),
    ]
    rec = InMemoryRecorder()
    result = await Agent(ScriptedProvider(script), tools=[lookup], nudges=False, recorders=[rec]).run("q")
    assert _record(rec)[-6:] == [
        ("step.finished", 2, {"think_only": True, "tool_calls": 0}),
        *_generation(3, "p3", Usage()),
        ("step.finished", 3, {"think_only": True, "tool_calls": 0}),
        (
            "run.finished",
            None,
            {
                "content": "Partial: checking a.",
                "steps": 3,
                "bounded": True,
                "generation_failed": False,
                "error": None,
                "served_by": "p3",
                "usage": Usage(),
                "cost": None,  # scripted: no price
                "tool_calls": 1,
            },
        ),
    ]
    assert result.bounded and not result.generation_failed and result.error is None
    assert result.content == "Partial: checking a."
    assert result.served_by == "p3"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]


async def test_max_steps_keeps_the_last_substantive_text_of_a_tool_step() -> None:
    # A tool step's text is its answer so far only when it is substantive: think blocks and a bare
    # lead-in are kept in the assistant message but never become the run's content.
    script = [
        LLMResponse("First finding.", (ToolCall("c1", "lookup", {"key": "a"}),), provider="p1"),
        LLMResponse("<think>more</think>", (ToolCall("c2", "lookup", {"key": "b"}),), provider="p2"),
        LLMResponse("Let me check.", (ToolCall("c3", "lookup", {"key": "c"}),), provider="p3"),
    ]
    rec = InMemoryRecorder()
    result = await Agent(ScriptedProvider(script), tools=[lookup], nudges=False, max_steps=3, recorders=[rec]).run("q")
    finished = [e for e in _record(rec) if e[0] == "step.finished"]
    assert finished == [("step.finished", n, {"tool_calls": 1, "routed": None}) for n in (1, 2, 3)]
    assert rec.events[-1].data["bounded"] is True and rec.events[-1].data["content"] == "First finding."
    assert result.bounded and result.steps == 3
    assert result.content == "First finding."
    assert result.served_by == "p3"
    assert [m.content for m in result.messages if m.role == "assistant"] == ["First finding.", "", "Let me check."]
    assert [c.id for c in result.tool_calls] == ["c1", "c2", "c3"]
    assert [m.role for m in result.messages] == ["user"] + ["assistant", "tool"] * 3


@pytest.mark.parametrize("useful", [True, False])
async def test_a_failed_step_keeps_the_earlier_steps(useful: bool) -> None:
    error = ProviderError("down", provider="p2", kind=ErrorKind.transient)
    first = LLMResponse("Found a." if useful else "", (ToolCall("c1", "lookup", {"key": "a"}),), provider="p1",
                        usage=Usage(3, 2))
    rec = InMemoryRecorder()
    result = await Agent(ScriptedProvider([first, error]), tools=[lookup], nudges=False, recorders=[rec]).run("q")
    assert _record(rec)[-4:] == [
        ("step.started", 2, {}),
        ("llm.request", 2, {"request": "<request>"}),
        ("step.finished", 2, {"failed": True, "error": "ProviderError"}),
        (
            "run.finished",
            None,
            {
                "content": "Found a." if useful else "",
                "steps": 2,
                "bounded": useful,
                "generation_failed": not useful,
                "error": "ProviderError",
                "served_by": "p1",
                "usage": Usage(3, 2),
                "cost": None,  # scripted: no price
                "tool_calls": 1,
            },
        ),
    ]
    assert rec.events[-2].data["error"] is error and result.error is error
    assert result.bounded is useful and result.generation_failed is not useful
    assert result.steps == 2 and result.served_by == "p1" and result.usage == Usage(3, 2)
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]


async def test_end_turn_takes_every_result_of_its_step_first() -> None:
    calls = (ToolCall("c1", "lookup", {"key": "a"}), ToolCall("f1", "suggest_followups", {"suggestions": ["Next?"]}))
    rec = InMemoryRecorder()
    agent = Agent(
        ScriptedProvider([LLMResponse("Checking.", calls, provider="p1"), "unused"]),
        tools=[lookup],
        followups=True,
        nudges=False,
        tool_policy=lambda call, ctx: "no lookups" if call.name == "lookup" else None,
        on_tool_status={ToolStatus.denied: "end_turn"},
        recorders=[rec],
    )
    result = await agent.run("q")
    assert _record(rec)[-2:] == [
        ("step.finished", 1, {"tool_calls": 2, "routed": "end_turn"}),
        (
            "run.finished",
            None,
            {
                "content": "Checking.",
                "steps": 1,
                "bounded": False,
                "generation_failed": False,
                "error": None,
                "served_by": "p1",
                "usage": Usage(),
                "cost": None,  # scripted: no price
                "tool_calls": 2,
            },
        ),
    ]
    assert result.followups == ("Next?",)  # the result after the routed one is still taken
    assert [(m.role, m.tool_call_id) for m in result.messages] == [
        ("user", None), ("assistant", None), ("tool", "c1"), ("tool", "f1")
    ]
    assert "no lookups" in result.messages[2].content
    assert result.ok and result.served_by == "p1"


async def test_raise_route_records_the_step_then_the_error() -> None:
    rec = InMemoryRecorder()
    agent = Agent(
        ScriptedProvider([LLMResponse("", (ToolCall("c1", "nope", {}),), usage=Usage(4, 1)), "unused"]),
        tools=[lookup],
        on_tool_status={ToolStatus.invalid: "raise"},
        recorders=[rec],
    )
    with pytest.raises(ToolStatusError) as info:
        await agent.run("q")
    assert _record(rec)[-2:] == [
        ("step.finished", 1, {"tool_calls": 1, "routed": "raise"}),
        ("run.finished", None, {"error": "ToolStatusError", "steps": 1, "usage": Usage(4, 1)}),
    ]
    assert rec.events[-1].data["error"] is info.value


async def test_json_fallback_call_ids_carry_their_step() -> None:
    script = ["<think>first</think>", 'On it.\n{"tool":"lookup","arguments":{"key":"a"}}', "a is value-of-a."]
    provider = ScriptedProvider(script, carries_tools=False)
    result = await Agent(provider, tools=[lookup], nudges=False, tool_choice=ToolChoice.required()).run("q")
    assert [c.id for c in result.tool_calls] == ["s2_1"]
    assert result.content == "a is value-of-a." and result.steps == 3
    for request in provider.requests:  # the JSON transport: no tools on the wire, the contract in the system
        assert request.tools == () and request.tool_choice == ToolChoice.auto()
        assert request.messages[0].role == "system" and '"tool"' in request.messages[0].content


async def test_a_forced_choice_ends_with_the_first_step_whatever_it_was() -> None:
    provider = ScriptedProvider(["<think>not yet</think>", ToolCall("c1", "lookup", {"key": "a"}), "done"])
    result = await Agent(provider, tools=[lookup], tool_choice=ToolChoice.required()).run("q")
    assert result.content == "done" and result.steps == 3
    assert [r.tool_choice for r in provider.requests] == [ToolChoice.required(), ToolChoice.auto(), ToolChoice.auto()]
