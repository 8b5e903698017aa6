"""``RunResult.raise_for_error()``: a failed run's error raised, any other result returned, so it chains."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.agent.core import Agent
from agentactors.errors import (
    ErrorKind,
    OutputValidationError,
    ProviderError,
    RunDeadlineExceededError,
    RunError,
)
from agentactors.loop.result import RunResult
from agentactors.messages import Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _fail(request: Any) -> Any:
    raise ProviderError("upstream down", provider="scripted", kind=ErrorKind.transient)


async def test_an_answered_run_returns_itself_so_it_chains() -> None:
    result = (await Agent(ScriptedProvider(["hello"])).run("hi")).raise_for_error()
    assert result.ok and result.content == "hello"


async def test_a_failed_run_raises_the_very_error_it_holds() -> None:
    result = await Agent(ScriptedProvider(_fail)).run("hi")
    assert result.generation_failed and isinstance(result.error, ProviderError)
    with pytest.raises(ProviderError, match="upstream down") as caught:
        result.raise_for_error()
    assert caught.value is result.error


async def test_a_run_past_its_deadline_raises_its_deadline_error() -> None:
    async def slow(request: Any) -> str:
        await anyio.sleep(60)
        return "late"

    result = await Agent(ScriptedProvider(slow)).run("hi", deadline=1.0)
    with pytest.raises(RunDeadlineExceededError):
        result.raise_for_error()


async def test_a_typed_run_that_never_validated_raises_output_validation_error() -> None:
    result = await Agent(ScriptedProvider(lambda request: "not a number"), output_type=int, output_retries=0).run("n?")
    assert not result.ok
    with pytest.raises(OutputValidationError):
        result.raise_for_error()


def test_generation_failed_without_an_error_raises_a_run_error() -> None:
    result: RunResult[str] = RunResult("", (Message.user("hi"),), generation_failed=True)
    with pytest.raises(RunError, match="generation_failed"):
        result.raise_for_error()


@pytest.mark.parametrize("stored", [KeyboardInterrupt(), SystemExit(3), "boom"], ids=["interrupt", "exit", "str"])
def test_an_error_that_is_no_exception_is_raised_as_a_run_error_from_it(stored: Any) -> None:
    # A batch keeps a run's own BaseException (SystemExit, a stray cancellation) in `error`: raised again far from
    # its run, it would stop the caller's program or look like the caller's cancellation.
    result: RunResult[str] = RunResult("", (Message.user("hi"),), error=stored)
    with pytest.raises(RunError, match=type(stored).__name__) as caught:
        result.raise_for_error()
    assert caught.value.__cause__ is (stored if isinstance(stored, BaseException) else None)


@tool
def ship(order: str) -> str:
    """Ship an order."""
    return f"shipped {order}"


@tool(requires_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


async def test_a_paused_run_is_no_error() -> None:
    provider = ScriptedProvider([ToolCall(id="c1", name="refund", arguments={"order": "7"}), "done"])
    result = await Agent(provider, tools=[refund]).run("refund 7")
    assert result.paused and not result.ok
    assert result.raise_for_error() is result


async def test_a_bounded_run_without_an_error_is_returned_as_it_is() -> None:
    provider = ScriptedProvider(
        lambda request: ToolCall(id=f"c{len(request.messages)}", name="ship", arguments={"order": "1"})
    )
    result = await Agent(provider, tools=[ship], max_steps=2).run("loop")
    assert result.bounded and result.error is None
    assert result.raise_for_error() is result


def test_a_cancelled_run_without_an_error_is_returned_as_it_is() -> None:
    result: RunResult[str] = RunResult("", (Message.user("hi"),), cancelled=True)
    assert result.raise_for_error() is result
