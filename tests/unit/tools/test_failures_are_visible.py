"""A tool that fails is visible to its developer, not only to the model.

The model reads ``Error: KeyError: 'Oslo'`` and the run goes on (``error=None``): a failing tool is a result,
not an exception (docs/reliability.md, "Tool outcomes").  Its developer gets a WARNING record on the
``agentactors.tools`` logger, naming the tool and the call, with the traceback (secrets masked), and the
``tools.finished`` event names the error's type (``error_type``).  The ok path gets neither.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest

from agentactors.errors import ModelRetry
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.messages import ToolCall
from agentactors.tools import ToolStatus, tool
from agentactors.tools.executor import ToolExecutorActor

pytestmark = pytest.mark.anyio

_LOGGER = "agentactors.tools"
# Key-shaped: masked by shape, with nothing registered (nothing to undo after the test).
_CANARY = "sk-canary0123456789abcdefXYZ"


def call(call_id: str, name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


def recording() -> tuple[InMemoryRecorder, EventSink]:
    rec = InMemoryRecorder()
    return rec, EventSink([rec], run_id="run-1")


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == _LOGGER and r.levelno == logging.WARNING]


@tool
async def weather_async(city: str) -> str:
    return {"Paris": "sunny"}[city]


@tool
def weather_sync(city: str) -> str:
    return {"Paris": "sunny"}[city]


@pytest.mark.parametrize("name", ["weather_async", "weather_sync"])
async def test_a_raising_tool_is_logged_with_its_traceback_and_named_on_the_event(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=_LOGGER)
    rec, sink = recording()
    with use_sink(sink):
        (result,) = await ToolExecutorActor([weather_async, weather_sync]).execute([call("c-7", name, city="Oslo")])
    assert result.status is ToolStatus.error and result.content == "Error: KeyError: 'Oslo'"
    (record,) = warnings_of(caplog)
    message = record.getMessage()
    assert name in message and "c-7" in message and "KeyError" in message and "Oslo" in message
    assert record.exc_info is not None and record.exc_info[0] is KeyError  # the traceback, for a handler to show
    assert "return {\"Paris\": \"sunny\"}[city]" in caplog.handler.format(record)  # down to the tool's own line
    (finished,) = rec.of_type("tools.finished")
    assert finished.data["status"] is ToolStatus.error and finished.data["error_type"] == "KeyError"


async def test_each_failing_call_of_a_step_is_logged_and_named(caplog: pytest.LogCaptureFixture) -> None:
    @tool
    async def divide(a: int, b: int) -> float:
        return a / b

    caplog.set_level(logging.WARNING, logger=_LOGGER)
    rec, sink = recording()
    with use_sink(sink):
        results = await ToolExecutorActor([divide, weather_sync]).execute(
            [call("a", "divide", a=1, b=0), call("b", "divide", a=4, b=2), call("c", "weather_sync", city="Rome")]
        )
    assert [r.status for r in results] == [ToolStatus.error, ToolStatus.ok, ToolStatus.error]
    raised = sorted(type(r.exc_info[1]).__name__ for r in warnings_of(caplog) if r.exc_info)
    assert raised == ["KeyError", "ZeroDivisionError"]
    types = {e.data["call_id"]: e.data.get("error_type") for e in rec.of_type("tools.finished")}
    assert types == {"a": "ZeroDivisionError", "b": None, "c": "KeyError"}


async def test_system_exit_in_a_tool_is_logged_the_same_way(caplog: pytest.LogCaptureFixture) -> None:
    @tool
    def cli() -> str:
        raise SystemExit(2)

    caplog.set_level(logging.WARNING, logger=_LOGGER)
    rec, sink = recording()
    with use_sink(sink):
        (result,) = await ToolExecutorActor([cli]).execute([call("x1", "cli")])
    assert result.content == "Error: SystemExit: 2"
    (record,) = warnings_of(caplog)
    assert "cli" in record.getMessage() and "x1" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is SystemExit
    assert rec.of_type("tools.finished")[0].data["error_type"] == "SystemExit"


async def test_the_record_masks_a_credential_in_the_message_and_the_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def leaky() -> str:
        raise ValueError(f"upstream refused key {_CANARY}")

    caplog.set_level(logging.WARNING, logger=_LOGGER)
    (result,) = await ToolExecutorActor([leaky]).execute([call("1", "leaky")])
    assert result.status is ToolStatus.error and _CANARY not in result.content
    (record,) = warnings_of(caplog)
    assert _CANARY not in record.getMessage()
    formatted = caplog.handler.format(record)
    assert "ValueError" in formatted and "Traceback" in formatted and _CANARY not in formatted


async def test_a_result_that_cannot_be_sent_is_logged_and_named(caplog: pytest.LogCaptureFixture) -> None:
    @tool
    async def odd() -> object:
        return object()

    caplog.set_level(logging.WARNING, logger=_LOGGER)
    rec, sink = recording()
    with use_sink(sink):
        (result,) = await ToolExecutorActor([odd]).execute([call("r1", "odd")])
    assert result.status is ToolStatus.error
    (record,) = warnings_of(caplog)
    assert "odd" in record.getMessage() and "r1" in record.getMessage() and "JSON" in record.getMessage()
    assert rec.of_type("tools.finished")[0].data["error_type"] == "TypeError"


async def test_ok_timeout_invalid_and_retry_are_not_warnings(caplog: pytest.LogCaptureFixture) -> None:
    @tool
    async def fine() -> float:
        return math.pi

    @tool
    async def again() -> str:
        raise ModelRetry("give a city, not a country")

    caplog.set_level(logging.WARNING, logger=_LOGGER)
    rec, sink = recording()
    with use_sink(sink):
        results = await ToolExecutorActor([fine, again]).execute(
            [call("1", "fine"), call("2", "again"), call("3", "fine", extra=1), call("4", "nope")]
        )
    assert [r.status for r in results] == [ToolStatus.ok, ToolStatus.error, ToolStatus.invalid, ToolStatus.invalid]
    assert warnings_of(caplog) == []  # a retry the tool asked for is no failure of it
    types = {e.data["call_id"]: e.data.get("error_type", "absent") for e in rec.of_type("tools.finished")}
    assert types == {"1": "absent", "2": "ModelRetry", "3": "absent", "4": "absent"}


async def test_the_record_can_be_written_as_utf8_when_the_message_holds_half_a_character(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A message decoded with ``surrogateescape`` holds a lone surrogate: the model's text has it replaced
    (docs/reliability.md), and so must the record, or a handler writing UTF-8 (a file, a pipe) fails on it."""

    @tool
    def decode() -> str:
        raise ValueError("bad byte \udcff in the file")

    caplog.set_level(logging.WARNING, logger=_LOGGER)
    (result,) = await ToolExecutorActor([decode]).execute([call("s\udcff", "decode")])
    assert result.status is ToolStatus.error
    (record,) = warnings_of(caplog)
    record.getMessage().encode()
    formatted = caplog.handler.format(record)
    formatted.encode()  # raised UnicodeEncodeError: surrogates not allowed
    assert "bad byte \ufffd in the file" in formatted and "Traceback" in formatted


@tool
async def remote_stock(item: str) -> str:
    from agentactors.mcp import MCPToolError

    raise MCPToolError(f"Error executing tool stock: no such item {item}")


async def test_a_remote_failure_is_logged_without_a_traceback_of_ours(caplog: pytest.LogCaptureFixture) -> None:
    """An MCP server's tool failed in the server: a traceback here showed only the library's frames (noise in every
    service log, found writing programs from the docs alone).  The WARNING keeps the tool, the call and the text."""
    caplog.set_level(logging.DEBUG, logger=_LOGGER)
    (result,) = await ToolExecutorActor([remote_stock]).execute([call("c-9", "remote_stock", item="pen")])
    assert result.status is ToolStatus.error
    (record,) = warnings_of(caplog)
    assert record.exc_info is None and record.exc_text is None
    assert "'remote_stock'" in record.getMessage() and "no such item pen" in record.getMessage()
