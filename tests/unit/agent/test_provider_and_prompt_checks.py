"""What Agent refuses up front rather than at the first model call: a provider that cannot be awaited, an
empty prompt; and what a duck-typed provider may leave out (``aclose``)."""

from __future__ import annotations

import functools
import logging
from typing import Any

import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.messages import LLMRequest, LLMResponse, Message
from agentactors.providers.scripted import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class _SyncComplete:
    """A provider whose ``complete`` is a plain function: awaiting what it returns fails at run time."""

    name = "sync"

    def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(content="x")


class _Duck:
    """A duck-typed provider with ``complete`` and a ``name``, and no ``aclose`` (optional for one)."""

    name = "duck"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(content="quack")


class _AsyncCall:
    async def __call__(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(content="called")


class _Held:
    """``complete`` held as an attribute: an async callable object or a partial of a coroutine function."""

    def __init__(self, complete: Any) -> None:
        self.complete = complete


async def _answer(text: str, request: LLMRequest) -> LLMResponse:
    return LLMResponse(content=text)


# --- the provider ---------------------------------------------------------------------------------


def test_a_provider_class_instead_of_an_instance_is_refused() -> None:
    # The class has a callable `complete` (an unbound function): it was accepted and every run failed with
    # "complete() missing 1 required positional argument".
    with pytest.raises(TypeError, match=r"instance.*ScriptedProvider\(\.\.\.\)"):
        Agent(ScriptedProvider)


def test_a_provider_whose_complete_is_a_plain_function_is_refused() -> None:
    # It was accepted, and every run failed with "object LLMResponse can't be used in 'await' expression".
    with pytest.raises(TypeError, match=r"async def complete"):
        Agent(_SyncComplete())


@pytest.mark.parametrize(
    "complete", [_AsyncCall(), functools.partial(_answer, "partial")], ids=["async __call__", "partial"]
)
async def test_an_async_callable_complete_is_a_provider(complete: Any) -> None:
    result = await Agent(_Held(complete)).run("hi")
    assert result.ok and result.content in ("called", "partial")


async def test_a_duck_typed_provider_without_aclose_closes_quietly(caplog: pytest.LogCaptureFixture) -> None:
    # Every runtime exit logged WARNING "closing provider ... raised AttributeError: ... no attribute 'aclose'".
    with caplog.at_level(logging.DEBUG):
        async with Runtime() as rt:
            result = await Agent(_Duck()).run("hi", runtime=rt)
    assert result.ok and result.content == "quack"
    assert not [r for r in caplog.records if "closing provider" in r.getMessage()]


# --- the prompt -----------------------------------------------------------------------------------


async def test_an_empty_prompt_is_refused_as_an_empty_conversation_is() -> None:
    # "" was accepted: Anthropic dropped the empty user message and answered 400 after a round trip,
    # OpenAI sent it.  [] was refused already; "" now is too, with the same error.
    provider = ScriptedProvider(["never"])
    agent = Agent(provider)
    with pytest.raises(ValueError, match="a run needs a prompt or at least one message"):
        await agent.run("")
    with pytest.raises(ValueError, match="a run needs a prompt or at least one message"):
        await agent.run([])
    with pytest.raises(ValueError, match="a run needs a prompt"):
        agent.stream("")
    assert provider.calls == 0


async def test_an_empty_prompt_in_a_batch_fails_alone() -> None:
    results = await Agent(ScriptedProvider(lambda request: "ok")).run_many(["", "hi"])
    assert isinstance(results[0].error, ValueError) and not results[0].ok
    assert results[1].ok and results[1].content == "ok"


async def test_a_blank_but_not_empty_prompt_and_an_empty_message_are_still_taken() -> None:
    # Only "" is refused (one cheap test on the hot path); a message the caller built is sent as built.
    agent = Agent(ScriptedProvider(lambda request: "ok"))
    assert (await agent.run(" ")).ok
    assert (await agent.run(Message.user("x"))).ok
