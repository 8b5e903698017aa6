"""A tool that fails *while* it is being cancelled: the cancellation travels on, the tool's own error is logged.

An async tool whose task group has a child that raises in its cleanup when cancelled ends, on trio, with
``BaseExceptionGroup([Cancelled, ValueError])`` (on asyncio anyio drops the child's cancellation: the group
is ``ExceptionGroup([ValueError])``, the call's ``error``, and the run's cancellation strikes at its next
await).  The cancellation is not the tool's to stop, but the ``ValueError`` must not ride along with it: out
of the run's scopes it would be all that is left, and the run would *raise* it instead of returning its
result (``docs/loop.md``: a deadline is never raised, a cancelled handle's result says ``cancelled``).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, ScriptedProvider, ToolCall, tool
from agentactors._containment import first_in
from agentactors.errors import RunDeadlineExceededError
from agentactors.events import EventSink, use_sink
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool(timeout=None)
async def fanout() -> str:
    """Fan out to two helpers, one of which fails in its cleanup when cancelled."""

    async def waits() -> None:
        await anyio.sleep(100)

    async def fails_when_cancelled() -> None:
        try:
            await anyio.sleep(100)
        except anyio.get_cancelled_exc_class():
            raise ValueError("cleanup failed token=sk-abcdefghijklmnopqrstuvwxyz0123") from None

    async with anyio.create_task_group() as tg:
        tg.start_soon(waits)
        tg.start_soon(fails_when_cancelled)
    return "never"


def _agent(rec: InMemoryRecorder) -> Agent:
    return Agent(ScriptedProvider([[ToolCall("c1", "fanout", {})], "final"]), tools=[fanout], recorders=[rec])


def _tool_statuses(rec: InMemoryRecorder) -> list[Any]:
    return [e.data["status"] for e in rec.of_type("tools.finished")]


def _expected_status(anyio_backend_name: str) -> ToolStatus:
    # asyncio: the tool's group holds no cancellation (anyio drops the child's), so the call is its error.
    return ToolStatus.cancelled if anyio_backend_name == "trio" else ToolStatus.error


async def test_the_executor_lets_only_the_cancellation_through_and_logs_the_tools_error(
    anyio_backend_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    rec = InMemoryRecorder()
    sink = EventSink([rec], run_id="run-1")
    ex = ToolExecutorActor([fanout])
    escaped: list[BaseException] = []
    caplog.set_level(logging.WARNING, logger="agentactors.tools")
    with use_sink(sink):
        with anyio.move_on_after(1) as scope:
            try:
                await ex.execute([ToolCall("c1", "fanout", {})])
            except BaseException as exc:
                escaped.append(exc)
                raise
    if anyio_backend_name == "trio":
        assert scope.cancelled_caught
        (alone,) = escaped
        assert isinstance(alone, anyio.get_cancelled_exc_class())  # the cancellation alone, no group
        assert alone.__context__ is None  # not the group it came in (which holds it: a cycle)
    assert _tool_statuses(rec) == [_expected_status(anyio_backend_name)]
    failures = [r for r in caplog.records if r.levelno == logging.WARNING and "fanout" in r.getMessage()]
    assert failures, "the tool's own error is logged"
    text = caplog.text
    assert "cleanup failed" in text
    assert "sk-abcdefghijklmnopqrstuvwxyz0123" not in text  # redacted as every tool error is


async def test_a_run_past_its_deadline_returns_its_result(anyio_backend_name: str) -> None:
    rec = InMemoryRecorder()
    result = await _agent(rec).run("go", deadline=0.2)
    assert isinstance(result.error, RunDeadlineExceededError)
    assert _tool_statuses(rec) == [_expected_status(anyio_backend_name)]
    assert rec.of_type("run.finished")


async def test_a_cancelled_handle_waits_to_a_cancelled_result(anyio_backend_name: str) -> None:
    rec = InMemoryRecorder()
    async with _agent(rec).stream("go") as run:

        async def canceller() -> None:
            await anyio.sleep(0.2)
            run.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(canceller)
            async for _ in run:
                pass
        result = await run.wait()
    assert result.cancelled
    assert _tool_statuses(rec) == [_expected_status(anyio_backend_name)]


async def test_a_run_under_move_on_after_ends_quietly(anyio_backend_name: str) -> None:
    rec = InMemoryRecorder()
    returned: list[Any] = []
    with anyio.move_on_after(0.2) as scope:
        returned.append(await _agent(rec).run("go"))
    if anyio_backend_name == "trio":
        assert scope.cancelled_caught and returned == []
    assert _tool_statuses(rec) == [_expected_status(anyio_backend_name)]


def _failing_while_cancelled(raised: BaseException) -> Any:
    @tool(timeout=None)
    async def fails() -> str:
        """Its helper raises ``raised`` when it is cancelled."""

        async def helper() -> None:
            try:
                await anyio.sleep(100)
            except anyio.get_cancelled_exc_class():
                raise raised from None

        async with anyio.create_task_group() as tg:
            tg.start_soon(helper)
            tg.start_soon(anyio.sleep, 100)
        return "never"

    return fails


# trio only: on asyncio a task raising SystemExit or KeyboardInterrupt stops the event loop itself.


@pytest.mark.parametrize("anyio_backend", ["trio"], indirect=True)
async def test_system_exit_in_the_group_is_the_tools_failure_and_the_cancellation_goes_on(
    anyio_backend_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    rec = InMemoryRecorder()
    ex = ToolExecutorActor([_failing_while_cancelled(SystemExit(3))])
    caplog.set_level(logging.WARNING, logger="agentactors.tools")
    with use_sink(EventSink([rec], run_id="run-1")), anyio.move_on_after(1):
        await ex.execute([ToolCall("c1", "fails", {})])
    assert _tool_statuses(rec) == [_expected_status(anyio_backend_name)]
    assert "SystemExit" in caplog.text


@pytest.mark.parametrize("anyio_backend", ["trio"], indirect=True)
async def test_a_keyboard_interrupt_in_the_group_still_travels_whole() -> None:
    ex = ToolExecutorActor([_failing_while_cancelled(KeyboardInterrupt())])
    with pytest.raises(BaseException) as raised, anyio.move_on_after(1):
        await ex.execute([ToolCall("c1", "fails", {})])
    assert first_in(raised.value, KeyboardInterrupt) is not None
