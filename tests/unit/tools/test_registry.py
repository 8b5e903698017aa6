"""``Tool.start``: an async tool's awaitable from validated arguments, converted, ordered and injected as by invoke."""

import datetime as dt
import json
from typing import Any

import pytest

from agentactors.tools import ToolContext, tool
from agentactors.tools.results import render_result

pytestmark = pytest.mark.anyio


@tool
async def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
async def shaped(day: dt.date, ratio: float, /, ctx: ToolContext, tags: tuple[str, ...] = ()) -> Any:
    """Converted, positional-only and context parameters."""
    return (day, ratio, tags, ctx.call_id)


@tool
def sync_add(a: int, b: int) -> int:
    """Add, in a worker thread."""
    return a + b


async def test_start_calls_the_function_with_the_arguments_as_they_are() -> None:
    arguments = {"a": 2, "b": 3}
    assert await add.start(arguments) == 5
    assert arguments == {"a": 2, "b": 3}  # not consumed


async def test_start_converts_orders_and_injects_like_invoke() -> None:
    ctx = ToolContext(call_id="c1", tool_name="shaped")
    arguments = {"day": "2024-05-01", "ratio": 2, "tags": ["x"]}
    expected = (dt.date(2024, 5, 1), 2.0, ("x",), "c1")
    assert await shaped.start(arguments, ctx) == expected
    assert await shaped.invoke(arguments, ctx) == expected
    assert type((await shaped.start(arguments, ctx))[1]) is float


async def test_start_refuses_a_sync_tool() -> None:
    with pytest.raises(TypeError, match="sync"):
        sync_add.start({"a": 1, "b": 2})
    assert await sync_add.invoke({"a": 1, "b": 2}) == 3


@pytest.mark.parametrize("value", [0, 5, -17, 10**40, True, None, 2.5, [1, "é"], {"k": (1, 2)}])
def test_rendering_matches_json_dumps(value: Any) -> None:
    assert render_result(value) == json.dumps(value, ensure_ascii=False)


async def test_invoke_runs_a_sync_tool_in_the_given_worker_threads_and_reports_abandonment() -> None:
    import threading

    import anyio

    from agentactors.actors.threads import WorkerThreads

    release = threading.Event()

    @tool
    def stuck() -> str:
        """Blocks until released."""
        release.wait(5)
        return "late"

    pool = WorkerThreads(1)
    reported: list[int] = []
    try:
        with anyio.move_on_after(0.1):
            await stuck.invoke({}, threads=pool, on_abandoned=reported.append)
        assert reported == [1] and pool.abandoned == 1
        assert await sync_add.invoke({"a": 1, "b": 2}, threads=pool) == 3  # the slot came back at once
    finally:
        release.set()
