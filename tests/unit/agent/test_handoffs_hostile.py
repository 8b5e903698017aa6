"""Handoffs, as a hostile model and a hostile production drive them: a handoff call with arguments that do not
parse, a run's cost limit and deadline across a handoff, a run cancelled while its target is being seated, a pause
made after a handoff resumed when the paused agent's toolset is down.  What a user relies on: the handoff tool takes
no arguments, so unreadable ones do not stop it; one run, one budget, one deadline, whoever answers; a cancellation
is a cancellation; a pause loses nothing when its resume could not start.  Both backends, virtual time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from agentactors import Agent, CostLimitExceeded, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import RunDeadlineExceededError
from tests.support.prices import STEP, USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

PAID: list[int] = []


@tool(requires_approval=True)
async def refund(amount: int) -> str:
    """Refund an amount."""
    PAID.append(amount)
    return f"refunded {amount}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    PAID.clear()


class Hanging:
    """A toolset whose listing never ends (a server that accepted the connection and says nothing)."""

    name = "hanging"

    async def list_tools(self, host: Any) -> Sequence[Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


class Flaky:
    """A toolset that lists ``refund`` until it is told to fail."""

    name = "flaky"

    def __init__(self) -> None:
        self.down = False

    async def list_tools(self, host: Any) -> Sequence[Any]:
        if self.down:
            raise OSError("no route to host")
        return [refund]


def _triage(target: Agent[str], *, max_steps: int = 8, provider: ScriptedProvider | None = None) -> Agent[str]:
    model = provider or ScriptedProvider([[ToolCall("h1", f"transfer_to_{target.name}", {})]])
    return Agent(model, name="triage", handoffs=[target], max_steps=max_steps)


async def test_a_handoff_call_whose_arguments_do_not_parse_is_still_taken() -> None:
    """The handoff tool has no parameters: there is nothing its arguments could say, so unreadable ones are no
    reason to keep the conversation from the agent the model chose."""
    billing = Agent(ScriptedProvider(["billing here"]), name="billing")
    triage = _triage(billing, provider=ScriptedProvider([[ToolCall.from_raw("h1", "transfer_to_billing", "{nope")]]))
    result = await triage.run("my invoice?")
    assert result.ok and result.agent == "billing" and result.content == "billing here"


async def test_a_runs_cost_limit_bounds_the_steps_after_a_handoff_too() -> None:
    target_model = ScriptedProvider(
        [LLMResponse("", tool_calls=(ToolCall(f"n{i}", "nothing", {}),), usage=USAGE) for i in range(10)],
        name="openai",
        model="gpt-4o",
    )
    billing = Agent(target_model, name="billing")
    first = ScriptedProvider(
        [LLMResponse("", tool_calls=(ToolCall("h1", "transfer_to_billing", {}),), usage=USAGE)],
        name="openai",
        model="gpt-4o",
    )
    result = await _triage(billing, max_steps=20, provider=first).run("x", cost_limit=2.5 * STEP)
    assert isinstance(result.error, CostLimitExceeded) and result.error.scope == "run"
    assert result.agent == "billing" and 1 <= target_model.calls <= 2  # one budget: the target spends what is left


async def test_a_runs_deadline_bounds_seating_its_target() -> None:
    stuck = Agent(ScriptedProvider(["never"]), name="stuck", toolsets=[Hanging()])
    with anyio.fail_after(600):
        result = await _triage(stuck).run("x", deadline=5)
    assert isinstance(result.error, RunDeadlineExceededError) and not result.ok
    assert result.agent == "triage" and result.handoffs == ()
    assert anyio.current_time() < 60


async def test_a_run_cancelled_while_its_target_is_seated_is_cancelled() -> None:
    stuck = Agent(ScriptedProvider(["never"]), name="stuck", toolsets=[Hanging()])
    triage = _triage(stuck)
    async with Runtime():
        with anyio.move_on_after(5) as scope:
            await triage.run("x")
        assert scope.cancelled_caught
        # The runtime is whole: another run goes on in it.
        billing = Agent(ScriptedProvider(["billing here"]), name="billing")
        assert (await _triage(billing).run("y")).content == "billing here"


async def test_a_pause_made_after_a_handoff_is_given_back_when_the_paused_agents_toolset_cannot_list() -> None:
    toolset = Flaky()
    model = ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})], "refunded"])
    billing = Agent(model, name="billing", toolsets=[toolset])
    triage = _triage(billing)
    async with Runtime():
        paused = await triage.run("refund 5")
        assert paused.paused and paused.agent == "billing"
        toolset.down = True
        with pytest.raises(Exception, match="could not list"):
            await triage.resume(paused, {"r1": True})
        assert PAID == []  # nothing ran: the pause must still be there
        toolset.down = False
        result = await triage.resume(paused, {"r1": True})
    assert result.ok and PAID == [5]
