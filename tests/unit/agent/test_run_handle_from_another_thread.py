"""A run's handle used from another thread's event loop: its control messages reach the run, or fail typed.

The run's inbox and the events that wake it belong to the runtime's loop.  A decision or a steer written
from another thread's loop used to wake nothing there (an approval in place then waited for ever) or to
fail half-way with that loop's own error (``RuntimeError: must be called from async context``, a bare
``AssertionError``).  Every host backend with every foreign one: asyncio and trio, either way round.

Real threads: no virtual time.  Each test is bounded.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import pytest

from agentactors import Agent, Runtime
from agentactors.agent.run import AgentRun
from agentactors.errors import RunFinishedError
from agentactors.messages import LLMRequest, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool
from tests.support.foreign_loop import from_thread

pytestmark = pytest.mark.anyio

FOREIGN = pytest.mark.parametrize("foreign", ["asyncio", "trio"])


def _approval_agent(sent: list[int]) -> Agent[Any]:
    @tool(requires_approval=True, approval="wait")
    async def send_money(amount: int) -> str:
        """Send money."""
        sent.append(amount)
        return f"sent {amount}"

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"result: {last.content}"
        return [ToolCall("pay1", "send_money", {"amount": 5})]

    return Agent(ScriptedProvider(model), tools=[send_money])


async def _until_pending(run: AgentRun[Any]) -> None:
    async for event in run:
        if event.type == "run.awaiting_approval":
            return


@FOREIGN
async def test_an_approval_from_another_threads_loop_runs_the_call_and_the_run_goes_on(foreign: str) -> None:
    sent: list[int] = []
    with anyio.fail_after(10):
        async with Runtime():
            async with _approval_agent(sent).stream("pay") as run:
                await _until_pending(run)
                outcome = await from_thread(foreign, lambda: run.approve("pay1"))
                assert outcome is None, f"the approval failed: {outcome!r}"
                result = await run.wait()  # hung for ever: the decision was written, the run never woken
    assert result.ok and result.content == "result: sent 5" and sent == [5]


@FOREIGN
async def test_a_steer_from_another_threads_loop_is_taken_and_a_late_one_is_run_finished(foreign: str) -> None:
    writing, go_on = anyio.Event(), anyio.Event()
    seen: list[list[str]] = []

    async def model(request: LLMRequest) -> str:
        seen.append([m.content for m in request.messages if m.role == "user"])
        if len(seen) == 1:
            writing.set()
            await go_on.wait()
        return "answer"

    with anyio.fail_after(10):
        async with Runtime():
            async with Agent(ScriptedProvider(model)).stream("q") as run:
                await writing.wait()
                outcome = await from_thread(foreign, lambda: run.steer("from afar"))
                assert outcome is None, f"the steer failed: {outcome!r}"
                go_on.set()
                waited = await from_thread(foreign, run.wait)  # the wait crosses too
                late = await from_thread(foreign, lambda: run.steer("too late"))
    assert seen == [["q"], ["q", "from afar"]], "the steer was taken once, at the next boundary"
    assert waited == run.result and run.result.ok
    assert isinstance(late, RunFinishedError)


async def test_cancel_from_another_thread_is_refused_and_the_run_is_untouched() -> None:
    writing, go_on = anyio.Event(), anyio.Event()

    async def model(request: LLMRequest) -> str:
        writing.set()
        await go_on.wait()
        return "answer"

    with anyio.fail_after(10):
        async with Runtime():
            async with Agent(ScriptedProvider(model)).stream("q") as run:
                await writing.wait()

                def cancel() -> BaseException | None:
                    try:
                        run.cancel()
                    except RuntimeError as exc:
                        return exc
                    return None

                refused = await anyio.to_thread.run_sync(cancel)
                go_on.set()
                result = await run.wait()
    assert isinstance(refused, RuntimeError) and "another thread" in str(refused)
    assert result.ok and not result.cancelled
