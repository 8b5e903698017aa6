"""Pure loop policies: think-only detection, nudges and the context budget."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.loop.context_budget import HEAD_CHARS, KEEP_LAST, fit_to_budget, message_chars
from agentactors.loop.nudges import (
    BATCH_NOTE,
    CONTINUE_NOTE,
    DEFAULT_NUDGES,
    FOLLOWUPS_TOOL,
    NO_NUDGES,
    REPEAT_NOTE,
    BareAcknowledgment,
    Nudges,
    RepeatedCall,
    StepView,
    is_bare_acknowledgment,
)
from agentactors.loop.thinking import is_think_only, strip_think
from agentactors.messages import Message, ToolCall
from agentactors.tools.results import ToolResult, ToolStatus

# --- think-only ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "   \n", "<think>plan</think>", "<think>a</think>\n<thinking>b</thinking>", "Let me think...",
     "Okay, let me think about this.", "Hmm…", "<think>cut off mid-thought", "Let me think step by step:"],
)
def test_think_only(text: str) -> None:
    assert is_think_only(text)


@pytest.mark.parametrize(
    "text", ["4", "<think>x</think>The answer is 4.", "Let me think: it is 4.", "Thinking machines are old."]
)
def test_not_think_only(text: str) -> None:
    assert not is_think_only(text)


def test_strip_think_keeps_only_the_answer() -> None:
    assert strip_think("<think>secret plan</think>\nThe answer.") == "The answer."
    assert strip_think("plan</think>The answer.") == "The answer."
    assert strip_think("  plain  ") == "plain"


# --- nudges --------------------------------------------------------------------------------------


def _ok(call: ToolCall, content: str = "r", status: ToolStatus = ToolStatus.ok) -> ToolResult:
    return ToolResult.of(call.id, call.name, status, content)


def _view(step: int, calls: list[ToolCall], contents: list[str] | None = None) -> StepView:
    contents = contents or [f"r{c.id}" for c in calls]
    return StepView(step, calls, [_ok(c, t) for c, t in zip(calls, contents, strict=True)])


def test_nudges_fitted_to_an_agent_leave_out_only_what_cannot_act_there() -> None:
    # No read-only tools: the batching policy can never note anything, so its runs do not build it.
    fitted = DEFAULT_NUDGES.fitted(frozenset())
    assert fitted is not None and len(fitted.factories) == len(DEFAULT_NUDGES.factories) - 1
    # With one, the policies are the agent's as given.
    assert DEFAULT_NUDGES.fitted(frozenset({"search"})) is DEFAULT_NUDGES
    assert NO_NUDGES.fitted(frozenset({"search"})) is None
    # The fitted session still notes a repeat, and still continues past a bare acknowledgment.
    assert fitted is not None
    session = fitted.start(frozenset().__contains__)
    assert session is not None
    call = ToolCall("1", "search", {"q": "x"})
    session.notes_for(_view(1, [call]))
    notes = session.notes_for(_view(2, [ToolCall("2", "search", {"q": "x"})], ["r1"]))
    assert notes == [REPEAT_NOTE.format(name="search")]
    followups = ToolCall("3", FOLLOWUPS_TOOL, {"suggestions": ["a"]})
    assert session.should_continue("Sure!", _view(3, [followups])) == CONTINUE_NOTE


def test_an_agent_without_the_followups_tool_leaves_the_acknowledgment_policy_out() -> None:
    # It continues a turn only after a call of the follow-ups tool: an agent that has none never builds it.
    without = DEFAULT_NUDGES.fitted(frozenset(), ["search"])
    assert without is not None and [f.__name__ for f in without.factories] == ["RepeatedCall"]
    with_tool = DEFAULT_NUDGES.fitted(frozenset(), ["search", FOLLOWUPS_TOOL])
    assert with_tool is not None and [f.__name__ for f in with_tool.factories] == ["RepeatedCall", "BareAcknowledgment"]
    assert DEFAULT_NUDGES.fitted(frozenset({"search"}), ["search", FOLLOWUPS_TOOL]) is DEFAULT_NUDGES
    # Its session still notes repeats, and asks nobody at the end of a turn.
    session = without.start(frozenset().__contains__)
    assert session is not None and not session.continues
    session.notes_for(_view(1, [ToolCall("1", "search", {"q": "x"})], ["r"]))
    notes = session.notes_for(_view(2, [ToolCall("2", "search", {"q": "x"})], ["r"]))
    assert notes == [REPEAT_NOTE.format(name="search")]
    followups = ToolCall("3", FOLLOWUPS_TOOL, {"suggestions": ["a"]})
    assert session.should_continue("Sure!", _view(3, [followups])) is None


def test_a_session_asks_each_policy_only_where_it_can_act() -> None:
    # The built-in policies that inherit a no-op are not asked there; a policy of the user's is asked everywhere.
    asked: list[str] = []

    class Mine:
        def __init__(self, is_read_only: object) -> None:
            pass

        def after_tools(self, view: StepView) -> list[tuple[int, str]]:
            asked.append("after_tools")
            return []

        def should_continue(self, answer: str, previous: StepView | None) -> str | None:
            asked.append("should_continue")
            return None

    session = Nudges((RepeatedCall, BareAcknowledgment, Mine)).start(frozenset().__contains__)
    assert session is not None and session.continues
    assert session.notes_for(_view(1, [ToolCall("1", "search", {})])) is None
    assert session.should_continue("Sure!", _view(1, [ToolCall("1", "search", {})])) is None
    assert asked == ["after_tools", "should_continue"]
    only_repeats = Nudges((RepeatedCall,)).start(frozenset().__contains__)
    assert only_repeats is not None and not only_repeats.continues


def test_batch_note_after_second_read_only_call_in_a_later_step_once() -> None:
    session = DEFAULT_NUDGES.start(lambda name: name == "search")
    assert session is not None
    assert session.notes_for(_view(1, [ToolCall("1", "search", {"q": 1})])) is None
    notes = session.notes_for(_view(2, [ToolCall("2", "search", {"q": 2})]))
    assert notes == [BATCH_NOTE.format(name="search")]
    assert session.notes_for(_view(3, [ToolCall("3", "search", {"q": 3})])) is None  # once per turn


def test_no_batch_note_for_calls_already_batched_or_not_read_only() -> None:
    session = DEFAULT_NUDGES.start(lambda name: name == "search")
    assert session is not None
    assert session.notes_for(_view(1, [ToolCall("1", "search", {"q": 1}), ToolCall("2", "search", {"q": 2})])) is None
    assert session.notes_for(_view(2, [ToolCall("3", "write", {"q": 1})])) is None
    assert session.notes_for(_view(3, [ToolCall("4", "write", {"q": 2})])) is None


def test_failed_read_only_calls_do_not_count() -> None:
    session = DEFAULT_NUDGES.start(lambda name: True)
    assert session is not None
    call = ToolCall("1", "search", {"q": 1})
    view = StepView(1, [call], [_ok(call, "Error: x", ToolStatus.error)])
    assert session.notes_for(view) is None
    assert session.notes_for(_view(2, [ToolCall("2", "search", {"q": 2})])) is None


def test_repeat_note_at_the_second_identical_occurrence_only() -> None:
    session = DEFAULT_NUDGES.start(lambda name: False)
    assert session is not None

    def call(i: int) -> ToolCall:
        return ToolCall(str(i), "get", {"k": 1, "j": [2]})

    assert session.notes_for(_view(1, [call(1)], ["same"])) is None
    assert session.notes_for(_view(2, [call(2)], ["same"])) == [REPEAT_NOTE.format(name="get")]
    assert session.notes_for(_view(3, [call(3)], ["same"])) is None
    # A different result is a different triple.
    assert session.notes_for(_view(4, [call(4)], ["other"])) is None


def test_repeat_and_batch_notes_join_on_one_result() -> None:
    session = DEFAULT_NUDGES.start(lambda name: True)
    assert session is not None
    session.notes_for(_view(1, [ToolCall("1", "s", {})], ["x"]))
    notes = session.notes_for(_view(2, [ToolCall("2", "s", {})], ["x"]))
    assert notes == [BATCH_NOTE.format(name="s") + "\n\n" + REPEAT_NOTE.format(name="s")]


@pytest.mark.parametrize(
    "text", ["Sure, I can help with that!", "Of course!", "Okay.", "Yes, sure!", "Happy to help.", "Got it, thanks!"]
)
def test_bare_acknowledgments(text: str) -> None:
    assert is_bare_acknowledgment(text)


@pytest.mark.parametrize(
    "text", ["", "Sure! The capital is Paris.", "The answer is 4.", "Sure, " * 20, "OK — 42"]
)
def test_not_bare_acknowledgments(text: str) -> None:
    assert not is_bare_acknowledgment(text)


def test_continue_once_after_followups_then_ack() -> None:
    session = DEFAULT_NUDGES.start(lambda name: False)
    assert session is not None
    previous = _view(1, [ToolCall("f", FOLLOWUPS_TOOL, {"suggestions": ["a"]})])
    assert session.should_continue("Sure, I can help with that!", None) is None
    assert session.should_continue("Sure, I can help with that!", _view(1, [ToolCall("x", "other", {})])) is None
    assert session.should_continue("The real answer.", previous) is None
    assert session.should_continue("Sure, I can help with that!", previous) == CONTINUE_NOTE
    assert session.should_continue("Sure, I can help with that!", previous) is None  # only once


class _OutOfRange:
    """A policy with a bug in what it answers: a result index the step does not have, a note that is no text."""

    def __init__(self, is_read_only: object) -> None:
        pass

    def after_tools(self, view: StepView) -> list[tuple[int, str]]:
        return [(len(view.results) + 4, "a note for no result")]

    def should_continue(self, answer: str, previous: StepView | None) -> Any:
        return 42


class _BadShape(_OutOfRange):
    def after_tools(self, view: StepView) -> Any:
        return [("0",), None]


def _refuses_to_start(is_read_only: object) -> Any:
    raise RuntimeError("this policy cannot start")


def test_a_policy_answering_out_of_shape_is_skipped_and_the_others_still_note(caplog: Any) -> None:
    # "A policy bug must not end a run": an out-of-range index used to raise IndexError into the loop.
    session = Nudges((_OutOfRange, _BadShape, RepeatedCall)).start(frozenset().__contains__)
    assert session is not None
    call = ToolCall("1", "get", {"k": 1})
    assert session.notes_for(_view(1, [call], ["same"])) is None
    assert session.notes_for(_view(2, [call], ["same"])) == [REPEAT_NOTE.format(name="get")]
    assert session.should_continue("Sure!", _view(2, [call])) is None  # 42 is no note
    assert "_OutOfRange" in caplog.text and "_BadShape" in caplog.text


def test_a_policy_that_cannot_start_is_left_out_of_the_run(caplog: Any) -> None:
    session = Nudges((_refuses_to_start, RepeatedCall)).start(frozenset().__contains__)
    assert session is not None
    call = ToolCall("1", "get", {})
    session.notes_for(_view(1, [call], ["same"]))
    assert session.notes_for(_view(2, [call], ["same"])) == [REPEAT_NOTE.format(name="get")]
    assert "cannot start" in caplog.text


def test_nudges_off_is_no_session() -> None:
    assert NO_NUDGES.start(lambda name: True) is None


# --- context budget ------------------------------------------------------------------------------


def _conversation(result_size: int, exchanges: int) -> list[Message]:
    msgs = [Message.system("sys"), Message.user("question")]
    for i in range(exchanges):
        msgs.append(Message.assistant("", [ToolCall(f"c{i}", "t", {"i": i})]))
        msgs.append(Message.tool(f"c{i}", str(i) * result_size, "t"))
    msgs.append(Message.assistant("partial"))
    return msgs


def _size(msgs: tuple[Message, ...] | list[Message]) -> int:
    return sum(message_chars(m) for m in msgs)


def test_fits_already_is_unchanged() -> None:
    msgs = _conversation(10, 2)
    assert fit_to_budget(msgs, 10_000) == tuple(msgs)


def test_oldest_tool_results_trimmed_first_to_head_and_stub() -> None:
    msgs = _conversation(5000, 6)
    budget = _size(msgs) - 4000
    out = fit_to_budget(msgs, budget)
    assert _size(out) <= budget
    assert len(out) == len(msgs)
    trimmed = [i for i, (a, b) in enumerate(zip(msgs, out, strict=True)) if a is not b]
    assert trimmed == [3]  # only the oldest result
    assert out[3].content.startswith("0" * HEAD_CHARS)
    assert "removed to fit the context budget" in out[3].content
    assert out[3].tool_call_id == "c0"


def test_protected_messages_are_never_touched() -> None:
    msgs = _conversation(5000, 6)
    out = fit_to_budget(msgs, 1)
    assert out[0] is msgs[0] and out[1] is msgs[1]
    assert out[-KEEP_LAST:] == tuple(msgs[-KEEP_LAST:])
    # With the budget unreachable, older exchanges are dropped whole.
    ids_called = {c.id for m in out for c in m.tool_calls}
    ids_answered = {m.tool_call_id for m in out if m.role == "tool"}
    assert ids_called == ids_answered


def test_tail_never_splits_a_call_from_its_results() -> None:
    msgs = [Message.system("s"), Message.user("q")]
    msgs.append(Message.assistant("", [ToolCall(f"p{i}", "t", {}) for i in range(8)]))
    msgs.extend(Message.tool(f"p{i}", "x" * 3000, "t") for i in range(8))
    out = fit_to_budget(msgs, 100)
    # The tail reaches back to the call message, so everything is protected and kept.
    assert out == tuple(msgs)


def test_pairs_never_broken_when_dropping() -> None:
    msgs = _conversation(100, 10)
    out = fit_to_budget(msgs, 500)
    for i, m in enumerate(out):
        if m.role == "tool":
            j = i - 1
            while out[j].role == "tool":
                j -= 1
            assert any(c.id == m.tool_call_id for c in out[j].tool_calls)


def test_a_trimmed_result_never_ends_on_half_a_surrogate_pair() -> None:
    # A pair written as two code points (UTF-16 decoded with "surrogatepass" leaves it so) cut between its
    # halves left a lone surrogate in the request, which no UTF-8 body can carry.
    content = "a" * (HEAD_CHARS - 1) + "\ud83d\ude00" + "b" * 5_000
    msgs = [Message.system("s"), Message.user("q"), Message.assistant("", [ToolCall("c0", "t", {})])]
    msgs += [Message.tool("c0", content, "t"), *(Message.user(str(i)) for i in range(KEEP_LAST))]
    out = fit_to_budget(msgs, 1_000)
    trimmed = out[3].content
    assert "removed to fit the context budget" in trimmed
    trimmed.encode("utf-8")  # a lone surrogate raises here
    assert trimmed.startswith("a" * (HEAD_CHARS - 1) + "\n[trimmed")
