"""``Agent(...)``, ``agent.stream(...)`` and ``agent.resume_stream(...)`` refuse a bad argument where it is written.

Each case was accepted before and failed far from the line that wrote it, or was silently ignored:
``agent.stream(p, deadline=nan)`` raised only when the handle was entered (its docs say the arguments are
checked when it is made); ``recorders=[InMemoryRecorder]`` (the class) was accepted and every event it
should have kept was logged as a recorder failure; ``on_tool_status={"eror": "raise"}`` (a typo) was kept
and never matched a status; ``name=""`` made an agent that looked named but could not be a tool or a
handoff target.  Every valid form keeps working (``on_tool_status`` keyed by the status' string too: a
``ToolStatus`` is a ``str``).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentactors import Agent, InMemoryRecorder, LLMResponse, Runtime, ToolCall, ToolStatus, tool
from agentactors.providers.scripted import ScriptedProvider


def p() -> ScriptedProvider:
    return ScriptedProvider(["ok"])


# --- Agent(...) -----------------------------------------------------------------------------------

AGENT_BAD: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"recorders": [InMemoryRecorder]}, TypeError, "recorders"),
    ({"recorders": (InMemoryRecorder,)}, TypeError, "class InMemoryRecorder"),
    ({"on_tool_status": {"eror": "raise"}}, ValueError, "on_tool_status"),
    ({"on_tool_status": {1: "raise"}}, ValueError, "on_tool_status"),
    ({"on_tool_status": {None: "continue"}}, ValueError, "on_tool_status"),
    ({"name": ""}, ValueError, "name"),
]


@pytest.mark.parametrize(
    ("kwargs", "error", "says"), AGENT_BAD, ids=[f"{next(iter(k))}={next(iter(k.values()))!r}" for k, _, _ in AGENT_BAD]
)
def test_agent_refuses_bad_argument_at_construction(kwargs: dict[str, Any], error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        Agent(p(), **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"recorders": [InMemoryRecorder()]},
        {"on_tool_status": {ToolStatus.error: "raise"}},
        {"on_tool_status": {"error": "raise", "timeout": "end_turn"}},  # the status' own string is the status
        {"on_tool_status": {}},
        {"name": "helper"},
        {"name": None},
    ],
    ids=["recorder-instance", "status-enum", "status-str", "status-empty", "name", "no-name"],
)
def test_agent_keeps_valid_arguments(kwargs: dict[str, Any]) -> None:
    Agent(p(), **kwargs)


def test_agent_on_tool_status_by_string_still_routes() -> None:
    agent = Agent(p(), on_tool_status={"error": "raise"})  # type: ignore[dict-item]
    assert agent._config.on_tool_status == {ToolStatus.error: "raise"}


# --- agent.stream(...) / agent.resume_stream(...) ---------------------------------------------------

STREAM_BAD: list[tuple[str, object, type[Exception]]] = [
    ("deadline", 0, ValueError),
    ("deadline", -1, ValueError),
    ("deadline", math.nan, ValueError),
    ("deadline", math.inf, ValueError),
    ("deadline", "5", ValueError),
    ("deadline", True, ValueError),
    ("priority", 1.5, TypeError),
    ("priority", "high", TypeError),
    ("priority", True, TypeError),
]
STREAM_IDS = [f"{f}={v!r}" for f, v, _ in STREAM_BAD]


@tool(requires_approval=True)
async def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"


def _pausing() -> Agent[str]:
    script = [LLMResponse("", tool_calls=(ToolCall("r1", "refund", {"amount": 5}),)), "Refunded 5."]
    return Agent(ScriptedProvider(script), name="desk", tools=[refund])


@pytest.mark.anyio
@pytest.mark.parametrize(("field", "value", "error"), STREAM_BAD, ids=STREAM_IDS)
async def test_stream_refuses_bad_option_when_called(field: str, value: object, error: type[Exception]) -> None:
    # Raised by the call itself, not when the handle is entered (where it was raised before).
    agent = Agent(p())
    with pytest.raises(error, match=field):
        agent.stream("hi", **{field: value})  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize(("field", "value", "error"), STREAM_BAD, ids=STREAM_IDS)
async def test_resume_stream_refuses_bad_option_when_called(field: str, value: object, error: type[Exception]) -> None:
    agent = _pausing()
    async with Runtime():
        paused = await agent.run("refund 5")
        assert paused.paused
        with pytest.raises(error, match=field):
            agent.resume_stream(paused, {"r1": True}, **{field: value})  # type: ignore[arg-type]
        # Nothing was claimed: the pause still goes on.
        resumed = await agent.resume(paused, {"r1": True})
    assert resumed.ok and resumed.content == "Refunded 5."


@pytest.mark.anyio
@pytest.mark.parametrize(("field", "value"), [("deadline", 2.5), ("deadline", 3), ("priority", -2), ("priority", 0)])
async def test_stream_keeps_valid_options(field: str, value: object) -> None:
    agent = Agent(p())
    async with Runtime():
        async with agent.stream("hi", **{field: value}) as run:  # type: ignore[arg-type]
            async for _ in run:
                pass
    assert run.result.ok and run.result.content == "ok"
