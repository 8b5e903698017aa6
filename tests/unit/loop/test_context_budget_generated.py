"""Generated conversations against the context budget (hypothesis): whatever it cuts, the request stays one a
vendor takes, and the rules of docs/loop.md ("Context budget") hold.

A conversation is drawn whole, as the loop holds it after the history repair (:mod:`agentactors.loop._history_repair`):
a system message or not, user and assistant turns, assistant turns making 1-4 parallel calls with their results
(empty, small, huge, JSON, with images, errors, carrying vendor data), steers (user or system messages after a
step's results), very long single messages, a greeting before the first user message; and a budget from 1 to past
the whole conversation (smaller than the protected messages included).  The fit is the loop's: ``fit_to_budget``
with the transport's measure, through a run's :class:`ContextBudget` step by step as well; and a real run with a
``ScriptedProvider`` checks that each request is that fit.  What is checked:

* the request is a fixed point of the history repair: each kept call has its result right after it, each kept
  result its call (every vendor refuses anything else);
* nothing is invented: each message sent is the conversation's own, in its order, or a trimmed form of one of
  its tool results (the same call id, name, vendor data and error flag; the head of its text and a stub that
  says how much was removed);
* the protected messages (system messages, the first and the last user message, the last ``KEEP_LAST`` moved
  back to their call) are sent as they are; a conversation whose first non-system message is a user message
  still starts so;
* it fits the budget, or — best effort, as documented — only protected messages are left, sent whole (no error);
* a conversation that fits is sent unchanged; trimming is oldest first and stops once it fits; drops are oldest
  first, and whole exchanges;
* the same input gives the same output (the cache is invisible), and a long run costs each step what is new.

What they found, as plain examples: the end of this file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentactors import PromptedOutput
from agentactors.agent.core import Agent
from agentactors.loop._history_repair import repair_history
from agentactors.loop.context_budget import (
    HEAD_CHARS,
    KEEP_LAST,
    ContextBudget,
    fit_to_budget,
    message_chars,
    wire_chars,
)
from agentactors.loop.json_transport import to_wire_messages
from agentactors.messages import Message, ToolCall
from agentactors.parts import Image, Text
from agentactors.providers.scripted import ScriptedProvider
from agentactors.testing import virtual_backends
from agentactors.tools.registry import tool

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 30

Measure = Callable[[Message], int]

# The examples per generated test (CONTEXT_BUDGET_EXAMPLES=5000 for a long hunt).
EXAMPLES = int(os.environ.get("CONTEXT_BUDGET_EXAMPLES", "130"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# --- drawing conversations --------------------------------------------------------------------------------

_CHARS = st.sampled_from(["x", "é", "e\u0301", "{", "[", "\U0001f1eb\U0001f1f7", "ab cd\n", "\U0001f44d\U0001f3fd"])


def _text(low: int, high: int) -> st.SearchStrategy[str]:
    """A text of about ``low``-``high`` characters: a repeated unit (cheap to draw however long), with a head."""
    return st.builds(
        lambda head, unit, n: (head + unit * n)[: max(high, len(head))],
        st.text(alphabet=st.sampled_from('ab{}[]"é \n'), max_size=12),
        _CHARS,
        st.integers(low, high),
    )


_SMALL = _text(0, 40)
_MEDIUM = _text(150, 700)
_HUGE = _text(2_000, 30_000)
_ANY_TEXT = st.one_of(_SMALL, _SMALL, _MEDIUM, _HUGE)


@st.composite
def _result(draw: Any, call: ToolCall) -> Message:
    kind = draw(st.sampled_from(["small", "medium", "huge", "json", "image", "images", "empty", "error", "vendor"]))
    if kind in ("image", "images"):
        parts: list[Any] = [Text(draw(_ANY_TEXT))] + [Image(data=PNG)] * (1 if kind == "image" else 3)
        return Message.tool(call.id, parts, call.name)
    if kind == "json":
        rows = draw(st.integers(0, 2_000))
        return Message.tool(call.id, json.dumps({"rows": list(range(rows))}), call.name)
    if kind == "empty":
        return Message.tool(call.id, "", call.name)
    if kind == "error":
        return Message.tool(call.id, "failed: " + draw(_ANY_TEXT), call.name, is_error=True)
    if kind == "vendor":
        return Message("tool", draw(_ANY_TEXT), (), call.id, call.name, "", {"gemini": {"id": call.id}}, False)
    return Message.tool(call.id, draw({"small": _SMALL, "medium": _MEDIUM, "huge": _HUGE}[kind]), call.name)


@st.composite
def _step(draw: Any, n: int) -> list[Message]:
    """An assistant message making 1-4 parallel calls, and their results in call order."""
    k = draw(st.integers(1, 4))
    calls = [
        ToolCall(f"call_{n}_{j}", draw(st.sampled_from(["search", "fetch", "shot"])), {"q": draw(_SMALL)})
        for j in range(k)
    ]
    thinking = draw(st.booleans())
    assistant = Message(
        "assistant", draw(_SMALL), tuple(calls), None, None, "thinking..." if thinking else "",
        {"anthropic": {"signature": "sig"}} if thinking else None, False,
    )
    return [assistant, *(draw(_result(call)) for call in calls)]


@st.composite
def conversations(draw: Any, max_turns: int = 30) -> list[Message]:
    """A well-formed conversation (see the module docstring)."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message.system(draw(_ANY_TEXT)))
    if draw(st.integers(0, 9)) == 0:  # a history from elsewhere: a greeting before the user's first words
        out.append(Message.assistant("Hello! How can I help?"))
    if draw(st.integers(0, 4)) == 0:
        out.append(Message.user([Text(draw(_ANY_TEXT)), Image(data=PNG)]))
    else:
        out.append(Message.user(draw(_ANY_TEXT)))
    for n in range(draw(st.integers(0, max_turns))):
        kind = draw(st.sampled_from(["step", "step", "step", "answer", "user", "steer", "system", "long"]))
        if kind == "step":
            out += draw(_step(n))
        elif kind == "answer":
            out.append(Message.assistant(draw(_ANY_TEXT)))
        elif kind == "user":
            out.append(Message.user(draw(_ANY_TEXT)))
        elif kind == "steer":  # after a step's results, before the next model call
            out.append(Message.user("steer: " + draw(_SMALL)))
        elif kind == "system":  # a steer may be a system message too
            out.append(Message.system("note: " + draw(_SMALL)))
        else:  # a very long single message
            role = draw(st.sampled_from(["user", "assistant"]))
            out.append(Message(role, draw(_text(20_000, 120_000)), (), None, None, "", None, False))
    return out


@st.composite
def cases(draw: Any) -> tuple[list[Message], int, bool]:
    """A conversation, a budget (1 to past the whole: around what the protected messages need too) and whether
    it is measured as the JSON transport sends it."""
    msgs = draw(conversations())
    wire = draw(st.booleans())
    measure = wire_chars if wire else message_chars
    total = sum(map(measure, msgs))
    floor = sum(measure(m) for m, keep in zip(msgs, protected(msgs), strict=True) if keep)
    budget = draw(
        st.one_of(
            st.integers(1, 60),
            st.integers(1, total + 10),
            st.integers(max(1, floor - 50), floor + 500),
            st.integers(max(1, min(floor, total)), max(1, total)),
            st.sampled_from([total, total + 1, max(1, total - 1), max(1, floor), floor + 1]),
        )
    )
    return msgs, budget, wire


# --- what the docs promise ------------------------------------------------------------------------------------

_STUB = re.compile(
    r"\n\[trimmed: (?:([\d,]+) more chars)?(?: and )?((?:\d+ (?:images?|documents?|audio clips?)(?: and )?)*) "
    r"of this earlier tool result (?:was|were) removed to fit the context budget"
    r"(?: \(the JSON above is cut off mid-structure: it is incomplete\))?\]\Z"
)


def protected(msgs: Sequence[Message]) -> list[bool]:
    """What docs/loop.md protects, worked out here on its own: every system message, the first and the last user
    message, and the last KEEP_LAST messages, moved back so as not to start among results."""
    keep = [m.role == "system" for m in msgs]
    users = [i for i, m in enumerate(msgs) if m.role == "user"]
    if users:
        keep[users[0]] = keep[users[-1]] = True
    tail = max(0, len(msgs) - KEEP_LAST)
    while tail > 0 and msgs[tail].role == "tool":
        tail -= 1
    for i in range(tail, len(msgs)):
        keep[i] = True
    return keep


def _trimmed_from(sent: Message, original: Message) -> bool:
    """Whether ``sent`` is ``original`` trimmed as documented: head and stub, same call, no media."""
    if original.role != "tool" or sent.role != "tool" or sent is original:
        return False
    if (sent.tool_call_id, sent.name, sent.provider_data, sent.is_error) != (
        original.tool_call_id,
        original.name,
        original.provider_data,
        original.is_error,
    ):
        return False
    head, mark, _ = sent.content.rpartition("\n[trimmed: ")
    stub = sent.content[len(head) :]
    found = _STUB.match(stub)
    assert mark and found, f"a changed result without its stub: {sent.content[-200:]!r}"
    assert sent.media == ()
    # The head: the first HEAD_CHARS characters (a few fewer not to split one), or the whole text (media trimmed).
    cut = original.content.startswith(head) and HEAD_CHARS - 32 <= len(head) <= HEAD_CHARS
    assert head == original.content or cut
    removed = int((found.group(1) or "0").replace(",", ""))
    assert removed == len(original.content) - len(head)
    assert bool(found.group(2)) == bool(original.media)
    return True


def _note(what: str) -> None:
    """Which rule an example reached (``--hypothesis-show-statistics``), inside a generated test."""
    if currently_in_test_context():
        event(what)


def check_fit(msgs: Sequence[Message], budget: int, measure: Measure, out: Sequence[Message]) -> None:
    keep = protected(msgs)
    # Nothing invented, order kept: each message sent is the next of the conversation's or its trimmed form.
    origin: list[int] = []
    j = 0
    for sent in out:
        while j < len(msgs) and not (sent is msgs[j] or _trimmed_from(sent, msgs[j])):
            j += 1
        assert j < len(msgs), f"sent a message the conversation does not hold, or out of order: {sent!r:.200}"
        origin.append(j)
        j += 1
    kept = set(origin)
    trimmed = [i for i, o in zip(origin, out, strict=True) if o is not msgs[i]]
    # The protected messages are sent, untouched.
    for i, m in enumerate(msgs):
        if keep[i]:
            assert i in kept and out[origin.index(i)] is m, f"protected message {i} ({m.role}) cut"
    # A vendor takes it: every kept call answered right after it, every kept result after its call.
    assert repair_history(out) is None, "the budget broke a call from its result"
    assert repair_history(msgs) is None  # (so was the input)
    # A conversation that started with a user turn (after system messages) still does (Anthropic refuses others).
    first = next((m for m in msgs if m.role != "system"), None)
    if first is not None and first.role == "user":
        assert next(m for m in out if m.role != "system") is first
    size = sum(map(measure, out))
    total = sum(map(measure, msgs))
    if total <= budget:  # fits: sent unchanged
        _note("fits")
        assert tuple(out) == tuple(msgs) and all(a is b for a, b in zip(out, msgs, strict=True))
        return
    if size > budget:  # best effort: only the protected messages are left, whole
        _note("over: protected only")
        assert all(keep[i] for i in origin), "over the budget with unprotected messages still sent"
        return
    dropped = [i for i in range(len(msgs)) if i not in kept]
    _note("trimmed only" if not dropped else "dropped")
    if not dropped:
        # Trimming oldest first, stopping once it fits: the last trim was needed.
        if trimmed:
            last = trimmed[-1]
            assert size - measure(out[origin.index(last)]) + measure(msgs[last]) > budget
        for i in range(len(msgs)):  # each result before a trimmed one was trimmed too, when trimming shrinks it
            m = msgs[i]
            if trimmed and i < trimmed[-1] and not keep[i] and m.role == "tool" and i not in trimmed:
                assert not m.media and len(m.content) <= HEAD_CHARS + 200, f"result {i} skipped by trimming"
        return
    # Dropping: whole groups (a call's message with all of its results), oldest first, and only while needed.
    for i in dropped:
        assert not keep[i]
        if msgs[i].role == "tool":
            call = max(c for c in range(i) if msgs[c].role != "tool")
            assert call in dropped, "a result dropped without its call"
        elif msgs[i].tool_calls:
            assert i + 1 not in kept or msgs[i + 1].role != "tool", "a call dropped without its results"
    unprotected_kept = [i for i in origin if not keep[i]]
    assert not unprotected_kept or max(dropped) < min(unprotected_kept), "a newer exchange dropped before an older"
    # Every result still sent was trimmed first (dropping comes after trimming everything unprotected) ...
    for i in unprotected_kept:
        m = msgs[i]
        if m.role == "tool" and i not in trimmed:
            assert not m.media and len(m.content) <= HEAD_CHARS + 200, f"result {i} kept untrimmed"
    # ... and the latest group dropped was needed: sent back (even untrimmed) it would not fit.
    start = max(dropped)
    while msgs[start].role == "tool":
        start -= 1
    assert size + sum(measure(msgs[i]) for i in range(start, max(dropped) + 1)) > budget


# --- the fit, on its own ----------------------------------------------------------------------------------


@SETTINGS
@given(case=cases())
def test_a_fit_keeps_the_documented_rules(case: tuple[list[Message], int, bool]) -> None:
    msgs, budget, wire = case
    measure = wire_chars if wire else message_chars
    out = fit_to_budget(msgs, budget, measure=measure)
    check_fit(msgs, budget, measure, out)
    # The same input, the same output: again, and through a run's budget (fresh, then remembering).
    assert fit_to_budget(msgs, budget, measure=measure) == out
    cache = ContextBudget(budget)
    assert cache.fit(msgs, measure) == out
    assert cache.fit(list(msgs), measure) == out
    if wire and sum(map(measure, out)) <= budget:  # what the JSON transport sends: within it whenever the fit is
        assert sum(map(message_chars, to_wire_messages(out))) <= budget


@SETTINGS
@given(case=cases(), checked=st.sets(st.integers(0, 400), max_size=6))
def test_a_run_growing_step_by_step_is_fitted_as_from_scratch(
    case: tuple[list[Message], int, bool], checked: set[int]
) -> None:
    # A run's budget sees the conversation grow (a step's call and results, a steer, an answer): what it sends at
    # each step is what a fit of that conversation from scratch sends (and, at some steps, the rules hold).
    msgs, budget, wire = case
    measure = wire_chars if wire else message_chars
    cache = ContextBudget(budget)
    for end in range(1, len(msgs) + 1):
        # The loop fits a conversation whose calls are all answered: a step's call and its results come together.
        if msgs[end - 1].tool_calls or (end < len(msgs) and msgs[end].role == "tool"):
            continue
        prefix = msgs[:end]
        out = cache.fit(prefix, measure)
        assert out == fit_to_budget(prefix, budget, measure=measure)
        if end in checked or end == len(msgs):
            check_fit(prefix, budget, measure, out)


# --- in a run: what the provider receives -----------------------------------------------------------------


class Titled(BaseModel):
    title: str


@tool
async def fetch(size: int, images: int = 0) -> Any:
    """Fetch a page of ``size`` characters, with ``images`` screenshots."""
    # (Async: a sync tool runs in a worker thread, on real time, which a virtual clock would time out.)
    text = f"page of {size}: " + "y" * size
    return [Text(text), *[Image(data=PNG)] * images] if images else text


@st.composite
def runs(draw: Any) -> tuple[list[Message], list[Any], int, bool, str, bool]:
    """A history (a conversation without a leading system message, ending with the user's new words), a script
    of 0-8 tool steps of 1-4 parallel calls then an answer, a budget, the transport, the system and nudges."""
    history = [m for m in draw(conversations(max_turns=12))]
    while history and history[0].role == "system":
        history.pop(0)
    history.append(Message.user("go on"))
    script: list[Any] = []
    for n in range(draw(st.integers(0, 8))):
        k = draw(st.integers(1, 4))
        script.append(
            [
                ToolCall(
                    f"run_{n}_{j}",
                    "fetch",
                    {"size": draw(st.sampled_from([0, 30, 500, 5_000, 40_000])), "images": draw(st.integers(0, 2))},
                )
                for j in range(k)
            ]
        )
    script.append("done")
    system = draw(st.sampled_from(["", "S", "You are terse. " * 40]))
    budget = draw(st.one_of(st.integers(1, 800), st.integers(1, 60_000), st.integers(60_000, 400_000)))
    return history, script, budget, draw(st.booleans()), system, draw(st.booleans())


async def _run_and_check(case: tuple[list[Message], list[Any], int, bool, str, bool]) -> None:
    history, script, budget, native, system, nudges = case
    provider = ScriptedProvider(script, carries_tools=native)
    agent = Agent(
        provider, tools=[fetch], context_budget_chars=budget, system=system or None, nudges=nudges, max_steps=20
    )
    result = await agent.run(history)
    assert result.ok, result.error
    conversation = result.messages
    assert not any(m.is_error for m in conversation[len(history) :])
    assert list(conversation[: len(history)]) == history  # the record keeps every message whole
    # The conversation before each model call: up to that call's answer.
    answers = [i for i in range(len(history), len(conversation)) if conversation[i].role == "assistant"]
    assert len(answers) == len(provider.requests) == len(script)
    measure = message_chars if native else wire_chars
    for request, end in zip(provider.requests, answers, strict=True):
        sent = request.messages
        left = budget
        if system or not native:  # (the JSON transport's system message holds its contract)
            assert sent[0].role == "system" and sent[0].content.startswith(system)
            left = max(1, budget - len(sent[0].content))  # the system message sent comes off the budget
            sent = sent[1:]
        before = conversation[:end]
        expected = fit_to_budget(before, left, measure=measure)
        check_fit(before, left, measure, expected)
        assert tuple(sent) == (expected if native else tuple(to_wire_messages(expected)))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(SETTINGS, max_examples=max(10, EXAMPLES // 3))
@given(case=runs())
def test_each_request_of_a_run_is_the_fit_of_its_conversation(
    backend: str, case: tuple[list[Message], list[Any], int, bool, str, bool]
) -> None:
    name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
    anyio.run(_run_and_check, case, backend=name, backend_options=options)


# --- cost -----------------------------------------------------------------------------------------------------


_reads = [0]


class _Counted(Message):
    """A message that counts the reads of its ``role`` and ``tool_calls``: what a walk over the conversation reads."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        if name == "role" or name == "tool_calls":
            _reads[0] += 1
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("pattern", ["steady", "big-then-small", "images", "steers"])
def test_a_run_of_2000_messages_costs_each_step_what_is_new(pattern: str) -> None:
    # A long run's budget measures each message once and resumes where the last step left: over a 2,000-message
    # run it reads each message a few times, not once a step (a walk a step: ~600 steps x 1,000 messages).
    sizes = {"steady": [600], "big-then-small": [40_000, 10], "images": [5], "steers": [300, 3_000]}[pattern]
    measured: list[Message] = []

    def counted(m: Message) -> int:
        measured.append(m)
        return message_chars(m)

    conversation: list[Message] = [Message.user("start")]
    cache = ContextBudget(20_000)
    _reads[0] = 0
    step = 0
    while len(conversation) < 2_000:
        k = 1 + step % 4
        calls = tuple(ToolCall(f"c{step}_{j}", "fetch", {"n": step}) for j in range(k))
        conversation.append(_Counted("assistant", "", calls))
        for j, call in enumerate(calls):
            size = sizes[(step + j) % len(sizes)]
            if pattern == "images":
                result = _Counted(role="tool", tool_call_id=call.id, name="fetch", parts=(Text("ok"), Image(data=PNG)))
            else:
                result = _Counted("tool", "z" * size, (), call.id, "fetch")
            conversation.append(result)
        if pattern == "steers" and step % 5 == 0:
            conversation.append(_Counted("user", f"steer {step}"))
        cache.fit(conversation, counted)
        step += 1
    reads = _reads[0]
    assert cache.fit(conversation, counted) == fit_to_budget(conversation, 20_000)
    assert len(measured) == len(conversation)  # each message measured once over the run
    assert reads <= 30 * len(conversation), reads


# --- what the generated programs found --------------------------------------------------------------------


def test_a_step_whose_trims_outweigh_what_it_adds_does_not_walk_the_conversation_again() -> None:
    # Found by the 2,000-message run: steps of 1-4 parallel calls in turn.  A step of one call moves the protected
    # tail past the step of three before it, whose trimmed results save more than the step adds: the total after
    # trimming shrank, and the drops were worked out again from the conversation's start — every fourth step
    # walked it all (per step, ~6 reads per message of the run: quadratic).  Fewer drops now do: the newest
    # dropped exchanges come back while they fit, as a fit from scratch would keep them.
    cache = ContextBudget(20_000)
    conversation: list[Message] = [Message.user("start")]
    per_step: list[int] = []
    for step in range(600):
        calls = tuple(ToolCall(f"c{step}_{j}", "fetch", {"n": step}) for j in range(1 + step % 4))
        conversation.append(_Counted("assistant", "", calls))
        conversation += [_Counted("tool", "z" * 600, (), call.id, "fetch") for call in calls]
        _reads[0] = 0
        sent = cache.fit(conversation)
        per_step.append(_reads[0])
        if step % 50 == 0:
            assert sent == fit_to_budget(conversation, 20_000)
    assert max(per_step[-100:]) < 200, max(per_step[-100:])  # it was ~3,800 at the 500th step


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_later_turns_question_is_not_dropped_while_the_first_turns_is_kept() -> None:
    # Found by the generated conversations: only the first user message was protected.  In a session's second
    # turn, a few tool steps pushed its question out of the last six messages, and the budget dropped it (36
    # characters, and still over the budget after) while it kept the first turn's: the model was asked to
    # summarize X again, with the pages it fetched to compare X with Y.  The latest user message stays too.
    history = [
        Message.user("Summarize the report on X."),
        Message.assistant("X: " + "a" * 3_000),
        Message.user("Now compare it with the report on Y."),
    ]
    script: list[Any] = [[ToolCall(f"c{i}", "fetch", {"size": 2_000})] for i in range(4)] + ["done"]
    provider = ScriptedProvider(script)
    agent = Agent(provider, tools=[fetch], context_budget_chars=4_000, system="S", nudges=False)
    result = await agent.run(history)
    assert result.ok, result.error
    for request in provider.requests:
        assert request.messages[1] is history[0]
        assert history[2] in request.messages, [m.content[:20] for m in request.messages]
    # The answer of the first turn gave way instead, and the rules hold.
    assert history[1] not in provider.requests[-1].messages
    check_fit(result.messages[:-1], 4_000 - 1, message_chars, provider.requests[-1].messages[1:])


@pytest.mark.anyio
@pytest.mark.virtual_time
@pytest.mark.parametrize("native", [True, False], ids=["native", "json-transport"])
async def test_a_prompted_outputs_system_message_comes_off_the_budget(native: bool) -> None:
    # Found checking each request against its budget: a typed run's prompted strategy sends its own system message
    # (the agent's and the schema's instruction, here ~250 characters), but the budget subtracted the agent's
    # ("S"): every request of the run was over it by the instruction's size.  Docs: "the system message the request
    # sends is subtracted from the budget first".
    script: list[Any] = [[ToolCall(f"c{i}", "fetch", {"size": 250})] for i in range(20)] + ['{"title": "t"}']
    provider = ScriptedProvider(script, carries_tools=native)
    agent = Agent(
        provider, tools=[fetch], context_budget_chars=2_000, system="S", nudges=False, max_steps=30,
        output_type=PromptedOutput(Titled),
    )
    result = await agent.run("go")
    assert result.ok, result.error
    for request in provider.requests:
        system = request.messages[0]
        assert system.role == "system" and len(system.content) > 200
        assert sum(map(message_chars, request.messages)) <= 2_000
