"""Bad arguments to ``Agent(...)``, ``agent.run(...)`` and ``agent.run_many(...)`` are a clear TypeError or
ValueError where they are given — never an error deep inside a run, a value taken for another, or a run
that never ends.

What a user relies on (docs/agents.md, the ``Agent`` docstring: "checked here, not at run time"): a
``max_steps`` of ``nan`` or ``inf`` would make a tool loop that never ends; ``system=5`` failed only at the
first model call; ``handoffs="billing"`` became one handoff per letter; ``run_many("hello")`` five runs of one
letter each; a ``progress`` or ``on_token`` that is not a function was called after every run or token and
its error logged, the caller never told.  Virtual time on both backends.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentactors import Agent, Message, Runtime, ScriptedProvider, tool
from agentactors.agent import handoff

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@tool
async def echo(text: str) -> str:
    """Echo."""
    return text


def _provider() -> ScriptedProvider:
    return ScriptedProvider(lambda request: "answer")


# --- Agent(...) ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["max_steps", "max_empty_steps"])
@pytest.mark.parametrize("value", [math.nan, math.inf, 2.5, "3", True, None])
def test_step_limits_must_be_ints(field: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"{field} must be an int"):
        Agent(_provider(), **{field: value})


@pytest.mark.parametrize("field", ["max_tool_result_chars", "context_budget_chars"])
@pytest.mark.parametrize("value", [math.nan, 2.5, "100", False])
def test_character_limits_must_be_ints_or_none(field: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"{field} must be an int or None"):
        Agent(_provider(), **{field: value})


@pytest.mark.parametrize("field", ["system", "model", "name"])
@pytest.mark.parametrize("value", [5, b"text", ["text"]])
def test_text_fields_must_be_str_or_none(field: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"{field} must be a str or None"):
        Agent(_provider(), **{field: value})


def test_the_other_fields_are_checked_where_they_are_given() -> None:
    with pytest.raises(TypeError, match="on_tool_status must be a mapping"):
        Agent(_provider(), on_tool_status="raise")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="followups must be True or False"):
        Agent(_provider(), followups="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["tools", "handoffs", "recorders"])
def test_a_collection_argument_given_one_value_or_a_string_says_to_pass_a_list(field: str) -> None:
    billing = Agent(_provider(), name="billing")
    one: Any = {"tools": echo, "handoffs": billing, "recorders": None}[field]
    values: tuple[Any, ...] = (one, "billing", 42)
    for value in values:
        with pytest.raises(TypeError, match=f"{field} takes a list"):
            Agent(_provider(), **{field: value})


def test_good_values_still_pass() -> None:
    billing = Agent(_provider(), name="billing")
    agent = Agent(
        _provider(),
        tools=(echo,),
        handoffs=[billing, handoff(billing, name="to_billing")],
        max_steps=3,
        max_empty_steps=1,
        max_tool_result_chars=100,
        context_budget_chars=None,
        system="s",
        model="m",
        name="desk",
        on_tool_status={},
        followups=True,
    )
    assert agent.max_steps == 3 and [h.name for h in agent.handoffs] == ["transfer_to_billing", "to_billing"]


# --- agent.run(...) ------------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", [None, 5, b"hello", {"role": "user", "content": "hi"}])
async def test_a_prompt_of_the_wrong_type_is_a_type_error_naming_what_a_prompt_is(prompt: Any) -> None:
    agent = Agent(_provider())
    with pytest.raises(TypeError, match="a prompt is a str, a Message"):
        await agent.run(prompt)
    with pytest.raises(TypeError, match="a prompt is a str, a Message"):
        agent.stream(prompt)


async def test_run_keywords_of_the_wrong_type_are_refused_before_the_run() -> None:
    provider = _provider()
    agent = Agent(provider)
    with pytest.raises(TypeError, match="on_token must be callable"):
        await agent.run("hi", on_token="print")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="runtime must be a Runtime"):
        await agent.run("hi", runtime="rt")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="runtime must be a Runtime"):
        agent.stream("hi", runtime="rt")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="runtime must be a Runtime"):
        agent.session("key", runtime="rt")  # type: ignore[arg-type]
    assert provider.requests == []
    assert (await agent.run("hi", on_token=lambda text: None)).content == "answer"


async def test_an_async_on_token_is_refused_before_the_run() -> None:
    # Called without being awaited, each token was lost with only a 'never awaited' warning.
    provider = _provider()
    agent = Agent(provider)

    async def shown(text: str) -> None:
        pass

    class Pusher:
        async def __call__(self, text: str) -> None:
            pass

    for callback in (shown, Pusher()):
        with pytest.raises(TypeError, match="on_token is called synchronously"):
            await agent.run("hi", on_token=callback)  # type: ignore[arg-type]
    assert provider.requests == []


# --- agent.run_many(...) / as_completed(...) --------------------------------------------------------------


@pytest.mark.parametrize("inputs", ["hello", Message.user("hello")])
async def test_run_many_of_one_prompt_is_a_type_error_not_a_run_per_letter(inputs: Any) -> None:
    provider = _provider()
    agent = Agent(provider)
    with pytest.raises(TypeError, match="takes an iterable of prompts"):
        await agent.run_many(inputs)
    async with Runtime():
        with pytest.raises(TypeError, match="takes an iterable of prompts"):
            agent.as_completed(inputs)
    assert provider.requests == []


async def test_a_progress_callback_that_cannot_be_called_as_one_is_refused_before_any_run() -> None:
    async def progress(done: int, failed: int, total: int) -> None:
        """Would never be awaited: run_many calls progress synchronously."""

    provider = _provider()
    agent = Agent(provider)
    with pytest.raises(TypeError, match="progress must be a plain function"):
        await agent.run_many(["a", "b"], progress=progress)
    with pytest.raises(TypeError, match="progress must be a plain function"):
        await agent.run_many(["a", "b"], progress=42)  # type: ignore[arg-type]
    assert provider.requests == []
    seen: list[tuple[int, int, int]] = []
    await agent.run_many(["a", "b"], progress=lambda *counts: seen.append(counts))
    assert seen == [(1, 0, 2), (2, 0, 2)]


# --- run.text_stream(min_interval=...) -------------------------------------------------------------------


@pytest.mark.parametrize("interval", [math.inf, math.nan, -1])
async def test_a_text_stream_interval_must_be_a_finite_number_of_seconds(interval: float) -> None:
    """``min_interval=inf`` yielded the first piece, then slept for ever: the stream hung, its run unread."""
    with pytest.raises(ValueError, match="min_interval must be a finite number of seconds >= 0"):
        Agent(_provider()).stream("hi").text_stream(min_interval=interval)


async def test_a_text_stream_interval_of_another_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="min_interval must be a number of seconds"):
        Agent(_provider()).stream("hi").text_stream(min_interval="0.1")  # type: ignore[arg-type]
