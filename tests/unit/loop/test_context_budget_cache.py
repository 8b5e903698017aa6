"""The context budget remembers what it measured: a long run measures each message once, and sends the same."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.agent.core import Agent
from agentactors.loop import context_budget, request
from agentactors.loop.config import LoopConfig
from agentactors.loop.context_budget import ContextBudget, fit_to_budget, message_chars, wire_chars
from agentactors.loop.state import LoopState
from agentactors.messages import Message, ToolCall
from agentactors.parts import Image, Text
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 30


def _counting(measure: Callable[[Message], int]) -> tuple[Callable[[Message], int], list[Message]]:
    seen: list[Message] = []

    def counted(m: Message) -> int:
        seen.append(m)
        return measure(m)

    return counted, seen


def _exchange(i: int, size: int = 500) -> list[Message]:
    call = ToolCall(f"c{i}", "search", {"query": f"q{i}", "n": i})
    return [Message.assistant("", [call]), Message.tool(f"c{i}", f"r{i} " + "x" * size, "search")]


# --- the same result as without the cache ----------------------------------------------------------------


_TEXT = st.text(alphabet=st.sampled_from('ab{}[]"é\u0301 \n'), max_size=400) | st.builds(
    lambda n, c: c * n, st.integers(0, 3_000), st.sampled_from(["x", "{", "é"])
)


@st.composite
def _steps(draw: Any) -> list[list[Message]]:
    """A conversation as it grows step by step: each step appends a few messages (sometimes a system message
    or a user message among them, a call with several results, a result with an image, one without its call)."""
    steps: list[list[Message]] = [[Message.system("s"), Message.user(draw(_TEXT))]]
    n = 0
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["call", "calls", "user", "answer", "system", "image", "orphan"]))
        if kind in ("call", "calls", "image"):
            k = 1 if kind != "calls" else draw(st.integers(2, 3))
            calls = [ToolCall(f"c{n + j}", "t", {"a": draw(_TEXT)}) for j in range(k)]
            step: list[Message] = [Message.assistant(draw(_TEXT), calls)]
            for call in calls:
                parts: Any = [Text(draw(_TEXT)), Image(data=PNG)] if kind == "image" else draw(_TEXT)
                step.append(Message.tool(call.id, parts, "t"))
            n += k
        elif kind == "user":
            step = [Message.user(draw(_TEXT))]
        elif kind == "system":
            step = [Message.system(draw(_TEXT))]
        elif kind == "orphan":  # a result whose call is not before it (a hand-made conversation)
            step = [Message.tool("lost", draw(_TEXT), "t")]
        else:
            step = [Message.assistant(draw(_TEXT))]
        steps.append(step)
    return steps


@settings(max_examples=150, deadline=None)
@given(steps=_steps(), budget=st.integers(1, 12_000), wire=st.booleans())
def test_a_cached_fit_sends_what_an_uncached_one_does_at_every_step(
    steps: list[list[Message]], budget: int, wire: bool
) -> None:
    measure = wire_chars if wire else message_chars
    cache = ContextBudget(budget)
    conversation: list[Message] = []
    for step in steps:
        conversation += step
        assert cache.fit(conversation, measure) == fit_to_budget(conversation, budget, measure=measure)
    # Twice over the same conversation: the same again, from what the cache remembers alone.
    assert cache.fit(conversation, measure) == fit_to_budget(conversation, budget, measure=measure)


@settings(max_examples=60, deadline=None)
@given(steps=_steps(), budget=st.integers(1, 12_000), cut=st.integers(0, 30))
def test_a_conversation_replaced_midway_is_measured_afresh(steps: list[list[Message]], budget: int, cut: int) -> None:
    # A handoff or a typed run's request: the messages given are not the ones before, only some of them.
    cache = ContextBudget(budget)
    conversation = [m for step in steps for m in step]
    cache.fit(conversation)
    other = [*conversation[:cut], Message.user("new"), *conversation[cut + 1 :]]
    assert cache.fit(other) == fit_to_budget(other, budget)
    assert cache.fit(other, wire_chars) == fit_to_budget(other, budget, measure=wire_chars)  # another measure
    assert cache.fit(other) == fit_to_budget(other, budget)


# --- what it saves --------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [10**9, 3_000], ids=["fits", "trims-and-drops"])
def test_each_step_measures_only_the_messages_new_to_it(budget: int) -> None:
    counted, seen = _counting(message_chars)
    cache = ContextBudget(budget)
    conversation = [Message.system("s"), Message.user("q")]
    for i in range(50):
        conversation += _exchange(i)
        cache.fit(conversation, counted)
    # Each message measured once over the run: 102, where a measure a step each would be 2,650.
    assert len(seen) == len(conversation) == 102
    assert len({id(m) for m in seen}) == 102


def test_a_result_is_trimmed_once_for_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    trimmed: list[Message] = []
    real = context_budget._trimmed_text

    def counted(m: Message) -> str | None:
        trimmed.append(m)
        return real(m)

    cache = ContextBudget(3_000)
    conversation = [Message.system("s"), Message.user("q")]
    sent = []
    with monkeypatch.context() as patch:
        patch.setattr(context_budget, "_trimmed_text", counted)
        for i in range(40):
            conversation += _exchange(i)
            sent.append(cache.fit(conversation))
        assert trimmed and len({id(m) for m in trimmed}) == len(trimmed)  # each result trimmed at most once
        trimmed.clear()
        cache.fit(conversation)
        assert trimmed == []  # nothing new: nothing trimmed again
    assert sent[-1] == fit_to_budget(conversation, 3_000)
    assert any("[trimmed: " in m.content for m in sent[-1])


def test_messages_that_left_the_conversation_are_let_go() -> None:
    # The cache holds each message it measured (so that its id stays its own) while the run gives it; those
    # the run no longer gives go once they outnumber the conversation: it stays within twice its size.
    cache = ContextBudget(10**9)
    gone = Message.tool("c0", "old " * 100, "t")
    ref = weakref.ref(gone)
    cache.fit([Message.user("q"), gone, *(m for i in range(50) for m in _exchange(i))])
    del gone
    gc.collect()
    assert ref() is not None  # held: no new object can take its id while the cache knows it
    for r in range(4):  # conversations of new messages only (a handoff's, a typed run's request)
        # (Each round's its own: a conversation equal to the last one given is that one, grown by nothing.)
        conversation = [m for i in range(50) for m in _exchange(50 * r + i)]
        assert cache.fit(conversation) == fit_to_budget(conversation, 10**9)
    gc.collect()
    assert ref() is None


# --- in the loop ----------------------------------------------------------------------------------------


def test_a_run_without_a_budget_holds_none_and_one_with_it_a_budget_per_seat() -> None:
    state = LoopState(LoopConfig(), [Message.user("q")], True, None, None)
    assert state.budget is None
    config = LoopConfig(system="agent", context_budget_chars=100)
    state = LoopState(config, [Message.user("q")], True, None, None)
    assert isinstance(state.budget, ContextBudget) and state.budget.chars == 100 - len("agent")
    first = state.budget
    state.seat(LoopConfig(system="b", context_budget_chars=50), True, (Message.user("q"),))
    assert isinstance(state.budget, ContextBudget) and state.budget is not first and state.budget.chars == 49
    state.seat(LoopConfig(), True, (Message.user("q"),))
    assert state.budget is None


@pytest.mark.anyio
@pytest.mark.parametrize("native", [True, False], ids=["native", "json-transport"])
async def test_a_long_run_measures_each_message_once(monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    counted, seen = _counting(message_chars)
    counted_wire, seen_wire = _counting(wire_chars)
    monkeypatch.setattr(request, "message_chars", counted)
    monkeypatch.setattr(request, "wire_chars", counted_wire)

    @tool
    def lookup(n: int) -> str:
        """Look."""
        return f"page {n} " + "y" * 400

    steps = 30
    script: list[Any] = [ToolCall(f"c{i}", "lookup", {"n": i}) for i in range(steps)] + ["done"]
    provider = ScriptedProvider(script, carries_tools=native)
    agent = Agent(provider, tools=[lookup], context_budget_chars=2_000, system="S", nudges=False, max_steps=100)
    result = await agent.run("go")
    measured = seen if native else seen_wire
    assert (seen_wire if native else seen) == []
    # Every message of the conversation measured once: 1 + 2 a step, not the whole conversation a step.
    assert len(measured) == len(result.messages) - 1 == 1 + 2 * steps
    # And the last request is what the uncached fit makes of the conversation before the answer.
    if native:
        expected = fit_to_budget(result.messages[:-1], 2_000 - len("S"))
        assert provider.requests[-1].messages[1:] == expected
        assert any("[trimmed: " in m.content for m in expected)
