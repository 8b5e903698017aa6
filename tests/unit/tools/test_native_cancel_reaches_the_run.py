"""A cancellation of the task a run works in is the run's end, even when it reaches a running tool natively.

``asyncio.run`` answers Ctrl-C by cancelling its main task with ``task.cancel()`` — no anyio scope asked for it —
and raises ``KeyboardInterrupt`` only once that task has ended cancelled.  A tool running inline in that task
saw the ``CancelledError`` first; the executor took it for a stray one (a library leaking it: the tool's own
failure), made it the tool's error result, and the run went on to its answer: the process ignored Ctrl-C.
``task.cancel()`` leaves the task's ``cancelling()`` count up, which a stray cancellation does not: that tells
the two apart (``agentactors._containment``).  On trio Ctrl-C reaches the run as ``KeyboardInterrupt`` itself.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, ScriptedProvider, ToolCall, tool

ROOT = Path(__file__).resolve().parents[3]


def holding_agent(started: anyio.Event, seen: list[str]) -> Agent:
    @tool(timeout=None)
    async def hold() -> str:
        """Holds until cancelled."""
        started.set()
        try:
            await anyio.Event().wait()
        except BaseException as exc:
            seen.append(type(exc).__name__)
            raise
        return "held"

    return Agent(ScriptedProvider([ToolCall("c1", "hold", {}), "done"]), tools=[hold])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_native_cancel_of_the_runs_task_cancels_the_run() -> None:
    started, seen = anyio.Event(), list[str]()
    agent = holding_agent(started, seen)
    task = asyncio.ensure_future(agent.run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # before: the run returned "done", the cancellation made the tool's error result
    assert seen == ["CancelledError"]



@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_parallel_tool_that_cancels_its_own_task_is_that_calls_error() -> None:
    """A step's parallel call runs in a task of the executor's group, which is cancelled through the group's
    scope, never natively: a task.cancel() of that task (the tool's own doing, or a library's that forgot
    uncancel) is stray there, the call's error, as before the run's own task.cancel() was told apart."""

    @tool(timeout=None)
    async def aborts() -> str:
        """Cancels its own task."""
        current = asyncio.current_task()
        assert current is not None
        current.cancel()
        await anyio.sleep(1)
        return "never"

    @tool(timeout=None)
    async def other() -> str:
        """Answers."""
        await anyio.lowlevel.checkpoint()
        return "other"

    agent = Agent(ScriptedProvider([[ToolCall("c1", "aborts", {}), ToolCall("c2", "other", {})], "done"]),
                  tools=[aborts, other])
    result = await agent.run("go")  # before: AssertionError, the executor lost a result
    assert result.content == "done"
    results = {m.tool_call_id: m for m in result.messages if m.role == "tool"}
    assert results["c1"].is_error and "CancelledError" in str(results["c1"].content)
    assert results["c2"].content == "other"

@pytest.mark.anyio
async def test_a_cancelled_scope_around_the_run_cancels_it_on_both_backends() -> None:
    started, seen = anyio.Event(), list[str]()
    agent = holding_agent(started, seen)
    result = None
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            nonlocal result
            result = await agent.run("go")

        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
    assert result is None and seen == [anyio.get_cancelled_exc_class().__name__]


_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading
    signal.signal(signal.SIGINT, signal.default_int_handler)  # an xdist worker's children ignore SIGINT
    import anyio
    from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, tool

    @tool(timeout=None)
    async def hold() -> str:
        '''Holds until cancelled.'''
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
        await anyio.sleep(60)
        return "held"

    agent = Agent(ScriptedProvider([ToolCall("c1", "hold", {}), "done"]), tools=[hold])

    async def main():
        if sys.argv[2] == "runtime":
            async with Runtime():
                return await agent.run("go")
        return await agent.run("go")

    try:
        result = anyio.run(main, backend=sys.argv[1])
    except KeyboardInterrupt:
        print("interrupted")
    else:
        print("returned", result.content, result.messages[2].content)
    """
)


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.mark.parametrize("where", ["private runtime", "runtime"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_during_a_tool_stops_the_program(backend: str, where: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, backend, where.split()[0]],
        capture_output=True, text=True, timeout=120, env=env, check=False, preexec_fn=default_sigint,
    )
    assert done.stdout.splitlines() == ["interrupted"], done.stdout + done.stderr[-3000:]
