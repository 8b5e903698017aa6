"""ToolExecutorActor hosted by the Runtime: asks with the asker's context, concurrency > 1, cancellation."""

from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.errors import AskTimeout
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.messages import ToolCall
from agentactors.tools import ToolContext, ToolStatus, tool
from agentactors.tools.executor import ExecuteTools, ExecutionContext, ToolExecutorActor

pytestmark = pytest.mark.anyio


@tool
async def echo(text: str, ctx: ToolContext) -> str:
    """Echo the text after a while."""
    await anyio.sleep(1)
    return f"{ctx.run_id}:{text}"


@tool
async def hang() -> str:
    await anyio.sleep(1000)
    return "never"


@pytest.mark.virtual_time
async def test_ask_through_the_runtime_with_concurrent_runs() -> None:
    recorders: dict[str, InMemoryRecorder] = {}
    async with Runtime() as rt:
        ref = rt.spawn(ToolExecutorActor([echo]), name="tools", concurrency=8)
        results: dict[str, Any] = {}

        async def run(run_id: str) -> None:
            rec = recorders[run_id] = InMemoryRecorder()
            with use_sink(EventSink([rec], run_id=run_id)):
                results[run_id] = await ref.ask(
                    ExecuteTools(
                        [ToolCall("a", "echo", {"text": "x"}), ToolCall("b", "echo", {"text": "y"})],
                        ExecutionContext(agent="bot"),
                    )
                )

        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(run, f"run-{i}")
        assert anyio.current_time() - start == pytest.approx(1)  # five runs, two calls each, all at once
    for i in range(5):
        run_id = f"run-{i}"
        assert [r.content for r in results[run_id]] == [f"{run_id}:x", f"{run_id}:y"]
        # each run's events reached that run's recorders, and only them (the ask carried the context)
        events = recorders[run_id].events
        assert {e.run_id for e in events} == {run_id}
        assert [e.type for e in events].count("tools.finished") == 2


@pytest.mark.virtual_time
async def test_ask_timeout_cancels_the_tool_call() -> None:
    rec = InMemoryRecorder()
    async with Runtime() as rt:
        ref = rt.spawn(ToolExecutorActor([hang, echo]), concurrency=4)
        with use_sink(EventSink([rec], run_id="r")), pytest.raises(AskTimeout):
            await ref.ask(ExecuteTools([ToolCall("h", "hang", {})]), timeout=0.5)
        # the actor is still serving
        (ok,) = await ref.ask(ExecuteTools([ToolCall("e", "echo", {"text": "z"})]))
        assert ok.status is ToolStatus.ok and ok.content == "None:z"
    finished = [e for e in rec.events if e.type == "tools.finished"]
    assert [(e.call_id, e.status) for e in finished] == [("h", ToolStatus.cancelled)]


async def test_wrong_message_goes_back_to_the_asker() -> None:
    async with Runtime() as rt:
        ref = rt.spawn(ToolExecutorActor([echo]))
        with pytest.raises(TypeError, match="ExecuteTools"):
            await ref.ask("not a message")
        assert await ref.ask(ExecuteTools([])) == ()
