"""The context budget under a hostile long session: media, JSON cut mid-structure, graphemes, thousands of steps."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.loop import context_budget
from agentactors.loop.context_budget import (
    CHARS_PER_TOKEN,
    HEAD_CHARS,
    KEEP_LAST,
    fit_to_budget,
    message_chars,
    wire_chars,
)
from agentactors.loop.json_transport import to_wire_messages
from agentactors.messages import Message, ToolCall
from agentactors.parts import IMAGE_TOKENS, Image, Text

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 30


def _call(i: int) -> Message:
    return Message.assistant("", [ToolCall(f"c{i}", "t", {"i": i})])


def _tail() -> list[Message]:
    return [Message.user(f"u{i}") for i in range(KEEP_LAST)]


# --- media ------------------------------------------------------------------------------------------


def test_an_image_counts_toward_the_budget_at_its_token_estimate() -> None:
    shot = Message.tool("c0", [Text("screenshot"), Image(data=PNG)], "t")
    assert message_chars(shot) == len("screenshot") + IMAGE_TOKENS * CHARS_PER_TOKEN
    assert message_chars(Message.user([Text("look"), Image(data=PNG), Image(data=PNG)])) == (
        4 + 2 * IMAGE_TOKENS * CHARS_PER_TOKEN
    )


def test_old_screenshots_give_way_though_their_text_is_short() -> None:
    # A computer-use loop: every result is a one-word text and an image.  Counted as text only they were
    # ~nothing, so no budget ever trimmed them and the request grew by an image a step until the vendor refused.
    msgs = [Message.system("s"), Message.user("drive the browser")]
    for i in range(20):
        msgs += [_call(i), Message.tool(f"c{i}", [Text("ok"), Image(data=PNG)], "t")]
    msgs += _tail()
    budget = 5 * IMAGE_TOKENS * CHARS_PER_TOKEN
    out = fit_to_budget(msgs, budget)
    assert sum(message_chars(m) for m in out) <= budget
    kept = [m for m in out if m.media]
    assert 0 < len(kept) <= 5
    # The oldest went first, and a result that lost its image says so.
    first = next(m for m in out if m.role == "tool")
    assert first.tool_call_id == "c0" and not first.media
    assert first.content.startswith("ok") and "1 image" in first.content
    # Pairs stay whole.
    assert {c.id for m in out for c in m.tool_calls} == {m.tool_call_id for m in out if m.role == "tool"}


def test_a_trimmed_result_with_long_text_and_media_loses_both_and_says_so() -> None:
    msgs = [Message.system("s"), Message.user("q"), _call(0)]
    msgs += [Message.tool("c0", [Text("x" * 5_000), Image(data=PNG)], "t"), *_tail()]
    out = fit_to_budget(msgs, 1_000)
    trimmed = out[3]
    assert not trimmed.media
    assert trimmed.content.startswith("x" * HEAD_CHARS)
    assert "4,800 more chars" in trimmed.content and "1 image" in trimmed.content


# --- what the stub says -------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", ['{"rows": [' + "1," * 3_000 + "1]}", '  [{"a": ' + "2" * 3_000 + "}]"])
def test_a_trimmed_json_result_says_it_is_cut_off(payload: str) -> None:
    msgs = [Message.system("s"), Message.user("q"), _call(0), Message.tool("c0", payload, "t"), *_tail()]
    out = fit_to_budget(msgs, 1_000)
    assert "removed to fit the context budget" in out[3].content
    assert "JSON above is cut off" in out[3].content


def test_a_trimmed_plain_result_does_not_mention_json() -> None:
    msgs = [Message.system("s"), Message.user("q"), _call(0), Message.tool("c0", "x" * 3_000, "t"), *_tail()]
    out = fit_to_budget(msgs, 1_000)
    assert "removed to fit the context budget" in out[3].content and "JSON" not in out[3].content


# --- graphemes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "kept"),
    [
        ("e\u0301", "a" * (HEAD_CHARS - 1)),  # e + combining acute: the cut fell before the accent
        ("\U0001f468\u200d\U0001f469\u200d\U0001f467", "a" * (HEAD_CHARS - 1)),  # a ZWJ family, cut after the man
        ("\U0001f44d\U0001f3fd", "a" * (HEAD_CHARS - 1)),  # thumbs up + skin tone modifier
        ("\u2764\ufe0f", "a" * (HEAD_CHARS - 1)),  # heart + variation selector
    ],
)
def test_a_trimmed_result_never_splits_a_grapheme(cluster: str, kept: str) -> None:
    content = "a" * (HEAD_CHARS - 1) + cluster + "b" * 5_000
    msgs = [Message.system("s"), Message.user("q"), _call(0), Message.tool("c0", content, "t"), *_tail()]
    out = fit_to_budget(msgs, 1_000)
    head = out[3].content.split("\n[trimmed")[0]
    assert head == kept
    removed = len(content) - len(head)
    assert f"{removed:,} more chars" in out[3].content


def test_an_endless_run_of_combining_marks_is_still_cut() -> None:
    # Zalgo text: the cut backs off a bounded way, then cuts anyway (the head is never emptied by it).
    content = "a" + "\u0301" * 10_000
    msgs = [Message.system("s"), Message.user("q"), _call(0), Message.tool("c0", content, "t"), *_tail()]
    out = fit_to_budget(msgs, 1_000)
    assert out[3].content.startswith("a\u0301") and "more chars" in out[3].content


# --- long runs ----------------------------------------------------------------------------------------


def test_a_long_run_builds_no_trimmed_message_it_then_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    # 5,000 messages over the budget even trimmed: every step trimmed all ~2,500 old results (a new message
    # each) and then dropped nearly all of them — the run's steps paid that again and again.
    msgs = [Message.system("s"), Message.user("q")]
    for i in range(2_500):
        msgs += [_call(i), Message.tool(f"c{i}", "x" * 2_000, "t")]

    class Counting:
        built = 0

        def __call__(self, *args: Any, **kwargs: Any) -> Message:
            self.built += 1
            return Message(*args, **kwargs)

        def tool(self, *args: Any, **kwargs: Any) -> Message:
            self.built += 1
            return Message.tool(*args, **kwargs)

    counting = Counting()
    monkeypatch.setattr(context_budget, "Message", counting)
    out = fit_to_budget(msgs, 100_000)
    assert sum(message_chars(m) for m in out) <= 100_000
    survivors = [m for m in out if m.role == "tool"]
    assert 0 < counting.built <= len(survivors) < 1_000


def test_the_rules_hold_for_every_budget_on_a_mixed_conversation() -> None:
    msgs = [Message.system("s"), Message.user([Text("q"), Image(data=PNG)])]
    for i in range(30):
        msgs += [Message.assistant(f"thinking {i}", [ToolCall(f"a{i}", "t", {}), ToolCall(f"b{i}", "t", {})])]
        msgs += [Message.tool(f"a{i}", "{" + "y" * (i * 97 % 1_500) + "}", "t")]
        msgs += [Message.tool(f"b{i}", [Text("z" * (i * 31 % 700)), Image(data=PNG)], "t")]
        if i % 7 == 0:
            msgs.append(Message.user(f"more {i}"))
    msgs.append(Message.assistant("done"))
    protected = sum(message_chars(m) for m in fit_to_budget(msgs, 1))
    for budget in (1, 50, 500, 5_000, 20_000, 60_000, 200_000, 10**9):
        out = fit_to_budget(msgs, budget)
        assert out[:2] == tuple(msgs[:2]) and out[-KEEP_LAST:] == tuple(msgs[-KEEP_LAST:])
        called = {c.id for m in out for c in m.tool_calls}
        assert called == {m.tool_call_id for m in out if m.role == "tool"}
        for i, m in enumerate(out):  # every result right after its call's message (or a sibling result)
            if m.role == "tool":
                j = i - 1
                while out[j].role == "tool":
                    j -= 1
                assert any(c.id == m.tool_call_id for c in out[j].tool_calls)
        assert sum(message_chars(m) for m in out) <= max(budget, protected)
        for m in out:
            m.content.encode("utf-8")


def test_a_flag_is_never_cut_between_its_two_letters() -> None:
    flag = "\U0001f1eb\U0001f1f7"  # FR: two regional indicators
    content = "a" * (HEAD_CHARS - 3) + flag + flag + "b" * 5_000  # the cut falls inside the second flag
    msgs = [Message.system("s"), Message.user("q"), _call(0), Message.tool("c0", content, "t"), *_tail()]
    out = fit_to_budget(msgs, 1_000)
    assert out[3].content.split("\n[trimmed")[0] == "a" * (HEAD_CHARS - 3) + flag


def test_a_trimmed_result_keeps_its_vendor_data() -> None:
    result = Message("tool", "x" * 5_000, (), "c0", "t", "", {"gemini": {"id": "fr-1"}}, False)
    msgs = [Message.system("s"), Message.user("q"), _call(0), result, *_tail()]
    out = fit_to_budget(msgs, 1_000)
    assert "removed to fit" in out[3].content and out[3].provider_data == {"gemini": {"id": "fr-1"}}


# --- the JSON transport ---------------------------------------------------------------------------------


def test_the_json_transport_is_measured_as_it_is_sent() -> None:
    # Without native tools each call goes as a contract block and each result under a header: short results
    # made the wire ~3x the counted size, and a request "within" the budget was three times over it.
    msgs = [Message.system("s"), Message.user("q")]
    for i in range(50):
        msgs.append(Message.assistant("", [ToolCall(f"c{i}", "lookup", {"q": "x"})]))
        msgs.append(Message.tool(f"c{i}", "r" * 20, "lookup"))
    msgs.append(Message.assistant("done"))
    budget = 2_000
    out = fit_to_budget(msgs, budget, measure=wire_chars)
    assert sum(message_chars(m) for m in to_wire_messages(out)) <= budget
    assert {c.id for m in out for c in m.tool_calls} == {m.tool_call_id for m in out if m.role == "tool"}
    # Natively measured, the same conversation fits whole.
    assert fit_to_budget(msgs, budget) == tuple(msgs)


def test_wire_chars_counts_a_trimmed_result_with_its_header() -> None:
    result = Message.tool("c0", '{"x": "' + "x" * 5_000, "t")
    msgs = [Message.system("s"), Message.user("q"), _call(0), result, *_tail()]
    budget = sum(wire_chars(m) for m in msgs) - 3_000
    out = fit_to_budget(msgs, budget, measure=wire_chars)
    assert "JSON above is cut off" in out[3].content
    assert sum(wire_chars(m) for m in out) <= budget


@pytest.mark.parametrize(
    ("payload", "json"),
    [
        ("[INFO] started\n" + "log line\n" * 500, False),  # a bracket that opens no JSON
        ("[truncated: t returned 9,000 chars; showing the first 4,000 of them]\n" + "x" * 4_000, False),
        ('[truncated: t returned 9,000 chars; showing the first 4,000 of them]\n{"rows": [' + "1," * 2_000, True),
        ("[\n  " + "3, " * 2_000, True),
        ('{"a": 1}' + " " * 3_000, True),
    ],
)
def test_only_a_json_head_is_called_json(payload: str, json: bool) -> None:
    msgs = [Message.system("s"), Message.user("q"), _call(0), Message.tool("c0", payload, "t"), *_tail()]
    out = fit_to_budget(msgs, 1_000)
    assert "removed to fit the context budget" in out[3].content
    assert ("JSON above is cut off" in out[3].content) is json
