"""A pause read back damaged is refused before anything runs (agentactors/loop/pause.py).

A ``PausedRun`` is data a caller stores — pickled, or rebuilt by hand — and unpickling does not go through its
constructor.  A field of the wrong type used to fail only once the resumed run had run the approved calls: the
payment made, then an ``AttributeError`` or a ``TypeError``, and the pause used up.  Now ``agent.resume`` (through
``check_decisions``) refuses it with a typed error, nothing runs and the pause is not claimed.  Virtual time on
both backends.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from agentactors import Agent, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.loop.pause import PausedRun, check_decisions
from agentactors.messages import Message
from agentactors.tools.results import ToolResult, ToolStatus

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

PAID: list[int] = []


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    PAID.append(amount)
    return f"paid {amount}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    PAID.clear()


def _agent() -> Agent[Any]:
    calls = (ToolCall("p1", "pay", {"amount": 5}),)
    return Agent(ScriptedProvider([LLMResponse("", tool_calls=calls), "done"]), name="payer", tools=[pay])


def _damaged(state: PausedRun, field: str, value: Any) -> PausedRun:
    """``state`` pickled, read back, and one field damaged (as a store or a hand-made document may leave it)."""
    copy: PausedRun = pickle.loads(pickle.dumps(state))
    object.__setattr__(copy, field, value)
    return copy


DAMAGE: list[tuple[str, Any, type[Exception]]] = [
    ("step", "3", TypeError),
    ("step", True, TypeError),
    ("usage", {"input_tokens": 1}, TypeError),
    ("calls", ({"id": "p1"},), TypeError),
    ("results", ("paid",), TypeError),
    ("messages", ({"role": "user"},), TypeError),
    ("reasons", {"p1": 5}, TypeError),
    ("tool_calls", [1], TypeError),
    ("answer", None, TypeError),
    ("handoffs", "ab", TypeError),
    ("output_step", "no", TypeError),
    ("run_id", 5, TypeError),
    ("messages", (Message.user("pay 5"),), ValueError),  # results would answer calls the model never made
    ("calls", (), ValueError),  # the pending call is not among the step's calls
]


@pytest.mark.parametrize(("field", "value", "error"), DAMAGE, ids=[f"{f}-{v!r}" for f, v, _ in DAMAGE])
async def test_a_damaged_pause_is_refused_before_anything_runs_and_stays_resumable(
    field: str, value: Any, error: type[Exception]
) -> None:
    agent = _agent()
    async with Runtime():
        paused = await agent.run("pay 5")
        state = paused.resume_state
        assert state is not None
        with pytest.raises(error, match=rf"PausedRun\.{field}|paused"):
            await agent.resume(_damaged(state, field, value), {"p1": True})
        assert PAID == []  # nothing ran
        result = await agent.resume(state, {"p1": True})  # the pause was not claimed
    assert result.ok and PAID == [5] and result.content == "done"


def test_results_and_ids_that_do_not_agree_with_the_calls_are_refused() -> None:
    calls = (ToolCall("a", "pay", {}), ToolCall("b", "pay", {}))
    state = PausedRun("r1", (Message.user("q"), Message.assistant("", calls)), calls, (), calls[:1])
    check_decisions(state, {"a": True})  # whole: accepted
    stray = ToolResult.of("zz", "pay", ToolStatus.ok, "x")
    with pytest.raises(ValueError, match="results for calls"):
        check_decisions(_damaged(state, "results", (stray,)), {"a": True})
    pending_result = ToolResult.of("a", "pay", ToolStatus.ok, "x")
    with pytest.raises(ValueError, match="results for calls"):
        check_decisions(_damaged(state, "results", (pending_result,)), {"a": True})
    twice = (calls[0], calls[0])
    with pytest.raises(ValueError, match="share an id"):
        check_decisions(_damaged(state, "calls", twice), {"a": True})
    with pytest.raises(TypeError, match="PausedRun"):
        check_decisions("not a pause", {"a": True})  # type: ignore[arg-type]


def test_a_pause_built_with_fields_of_the_wrong_type_is_refused_when_made() -> None:
    call = ToolCall("a", "pay", {})
    with pytest.raises(TypeError, match=r"PausedRun\.step"):
        PausedRun("r1", (), (call,), (), (call,), step="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"PausedRun\.pending"):
        PausedRun("r1", (), (call,), (), ("a",))  # type: ignore[arg-type]
