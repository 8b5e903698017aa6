"""The JSON-fallback transport: contract text, string-aware block scanning, and the stream filter."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors._json import MAX_DEPTH
from agentactors.loop.json_transport import StreamFilter, contract_text, match_brace, parse_reply, to_wire_messages
from agentactors.messages import Message, ToolCall, ToolSpec
from agentactors.parts import Image, Text


def test_contract_lists_tools_and_block_format() -> None:
    spec = ToolSpec("add", "Add two numbers.", {"type": "object", "properties": {"a": {"type": "integer"}}})
    text = contract_text([spec])
    assert '{"tool": "<tool name>", "arguments": {' in text
    assert "- add: Add two numbers." in text
    assert '"a":{"type":"integer"}' in text


# --- scenario 8, exactly -------------------------------------------------------------------------


def test_scenario8_answer_then_block() -> None:
    parsed = parse_reply('Answer.\n{"tool":"add","arguments":{"a":1,"b":2}}')
    assert parsed.text == "Answer."
    assert len(parsed.calls) == 1
    assert parsed.calls[0].name == "add"
    assert parsed.calls[0].arguments == {"a": 1, "b": 2}


def test_scenario8_braces_and_escaped_quotes_inside_a_string() -> None:
    raw = '{"tool":"search","arguments":{"q":"x\\"}{\\"q"}}'
    parsed = parse_reply("Searching.\n" + raw)
    assert parsed.text == "Searching."
    assert [c.arguments for c in parsed.calls] == [{"q": 'x"}{"q'}]


def test_scenario8_fenced_block_parsed_and_fence_removed() -> None:
    parsed = parse_reply('Let me add.\n```json\n{"tool":"add","arguments":{"a":1,"b":2}}\n```\n')
    assert parsed.text == "Let me add."
    assert "```" not in parsed.text
    assert parsed.calls[0].arguments == {"a": 1, "b": 2}


def test_scenario8_broken_json_is_not_run_and_stays_in_text() -> None:
    text = 'Answer.\n{"tool":"add","arguments":{"a":1,"b":}}'
    parsed = parse_reply(text)
    assert parsed.calls == ()
    assert parsed.text == text


# --- more shapes ---------------------------------------------------------------------------------


def test_several_blocks_nested_objects_and_unique_ids() -> None:
    parsed = parse_reply(
        'Two things.\n{"tool":"a","arguments":{"x":{"y":[1,{"z":"}"}]}}}\n{"tool":"b","arguments":{}}',
        id_prefix="s3_",
    )
    assert parsed.text == "Two things."
    assert [c.name for c in parsed.calls] == ["a", "b"]
    assert parsed.calls[0].arguments == {"x": {"y": [1, {"z": "}"}]}}
    assert [c.id for c in parsed.calls] == ["s3_1", "s3_2"]


def test_json_that_is_not_a_call_stays() -> None:
    text = 'The config is {"debug": true} as shown.'
    assert parse_reply(text) == parse_reply(text)
    assert parse_reply(text).text == text
    assert parse_reply(text).calls == ()


def test_unclosed_brace_is_text_and_a_later_block_still_counts() -> None:
    parsed = parse_reply('Set {x to 1.\n{"tool":"a","arguments":{"k":"v"}}')
    assert parsed.text == "Set {x to 1."
    assert parsed.calls[0].arguments == {"k": "v"}


def test_fence_with_prose_keeps_prose() -> None:
    parsed = parse_reply('```\nnote\n{"tool":"a","arguments":{}}\n```')
    assert parsed.calls[0].name == "a"
    assert parsed.text.startswith("```") and "note" in parsed.text and '"tool"' not in parsed.text


def test_unclosed_fence_with_a_call_is_parsed() -> None:
    parsed = parse_reply('Adding.\n```json\n{"tool":"add","arguments":{"a":1}}\n')
    assert parsed.text == "Adding."
    assert parsed.calls[0].arguments == {"a": 1}


def test_non_call_fence_is_untouched() -> None:
    text = "Example:\n```python\nprint({1: 2})\n```"
    assert parse_reply(text).text == text


def test_double_encoded_arguments_are_accepted() -> None:
    parsed = parse_reply('{"tool":"a","arguments":"{\\"k\\": 1}"}')
    assert parsed.calls[0].arguments == {"k": 1}


@pytest.mark.parametrize(
    "block", ['{"tool":"","arguments":{}}', '{"tool":3,"arguments":{}}', '{"tool":"a","arguments":[1]}']
)
def test_malformed_calls_are_text(block: str) -> None:
    parsed = parse_reply(block)
    assert parsed.calls == ()
    assert parsed.text == block


def test_match_brace_is_string_aware() -> None:
    text = '{"a":"\\\\"}x'
    assert match_brace(text, 0) == len(text) - 2
    assert match_brace('{"a":"}', 0) is None


# --- the stream filter ---------------------------------------------------------------------------


def _stream(text: str, size: int) -> tuple[list[str], str]:
    f = StreamFilter()
    shown = [f.feed(text[i : i + size]) for i in range(0, len(text), size)]
    shown.append(f.finish())
    return shown, "".join(shown)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 1000])
def test_stream_never_shows_a_call_and_matches_the_parsed_text(size: int) -> None:
    text = (
        'Here is the plan.\n{"tool":"add","arguments":{"a":"}{"}}\nThen `code` and more.\n'
        '```json\n{"tool":"b","arguments":{}}\n```\nDone {not json}.'
    )
    _, shown = _stream(text, size)
    assert '"tool"' not in shown
    assert shown == parse_reply(text).text


def test_stream_releases_prose_before_a_block_at_once() -> None:
    f = StreamFilter()
    assert f.feed("Hello there") == "Hello there"
    assert f.feed(' and {"to') == " and"
    assert f.feed('ol":"a","arguments":{}}') == ""
    assert f.feed(" bye") == "  bye"  # the space held before the block, then the new one
    assert f.finish() == ""


def test_stream_shows_a_non_call_brace_once_resolved() -> None:
    f = StreamFilter()
    assert f.feed("x = {a") == "x ="
    assert f.feed("}; y") == " {a}; y"


def test_stream_inline_backticks_pass() -> None:
    f = StreamFilter()
    assert f.feed("use `x` ") == "use `x`"
    assert f.feed("now") == " now"


def test_stream_unclosed_block_is_shown_at_the_end() -> None:
    f = StreamFilter()
    assert f.feed('cut {"tool":"a","argu') == "cut"
    assert f.finish() == ' {"tool":"a","argu'


_prose = st.text(alphabet=st.sampled_from(list("abc {}`\n\"\\:,")), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(
            _prose,
            st.builds(
                lambda n, v: json.dumps({"tool": n, "arguments": {"v": v}}),
                st.sampled_from(["a", "b"]),
                st.text(max_size=8),
            ),
        ),
        max_size=6,
    ),
    size=st.integers(1, 7),
)
def test_stream_and_parse_agree_and_never_leak_calls(pieces: list[str], size: int) -> None:
    text = "\n".join(pieces)
    parsed = parse_reply(text)
    _, shown = _stream(text, size)
    # Every call the parser found is hidden from the stream: only unexecuted blocks show.
    assert shown.count('"tool"') == parsed.text.count('"tool"')
    assert shown.strip() == shown
    # The shown text holds the same non-space characters as the parsed text.
    assert "".join(shown.split()) == "".join(parsed.text.split())


# --- hostile replies: linear work, the JSON policy, think blocks -------------------------------------


def _cpu(fn: Callable[[], object]) -> float:
    """CPU seconds ``fn`` takes (process time: the machine may be shared)."""
    started = time.process_time()
    fn()
    return time.process_time() - started


def test_many_braces_that_never_close_are_scanned_in_linear_time() -> None:
    # Each unclosed brace used to be matched to the end of the text again: 25,000 of them took ~20 s.
    call = '{"tool":"a","arguments":{"k":1}}'
    text = "{" * 25_000 + "\n" + call
    took = _cpu(lambda: parse_reply(text))
    parsed = parse_reply(text)
    assert took < 2.0
    assert [c.arguments for c in parsed.calls] == [{"k": 1}]
    assert parsed.text == "{" * 25_000


def test_open_strings_that_never_close_are_scanned_in_linear_time() -> None:
    text = '{"' * 30_000 + '\n{"tool":"a","arguments":{}}'
    took = _cpu(lambda: parse_reply(text))
    assert took < 2.0
    assert [c.name for c in parse_reply(text).calls] == ["a"]


def _reference_match(text: str, start: int) -> int | None:
    """match_brace as it was first written: one character at a time (the meaning the fast scans keep)."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _reference_calls(text: str) -> list[str]:
    """The blocks a brace-only reply holds that parse as calls, brace by brace (quadratic, for small texts)."""
    found: list[str] = []
    i = 0
    while (brace := text.find("{", i)) >= 0:
        end = _reference_match(text, brace)
        if end is None:
            i = brace + 1
            continue
        block = text[brace : end + 1]
        try:
            value = json.loads(block)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("tool"), str) and value["tool"].strip():
            found.append(value["tool"])
        i = end + 1
    return found


_brace_soup = st.text(alphabet=st.sampled_from(list('{}"\\ab')), max_size=30)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(_brace_soup, st.sampled_from(['{"tool":"a"}', '{"tool":"b","arguments":{"k":"}"}}'])), max_size=8
    )
)
def test_unclosed_braces_are_matched_as_one_brace_at_a_time_would(pieces: list[str]) -> None:
    text = "".join(pieces)
    for start in range(len(text)):
        if text[start] == "{":
            assert match_brace(text, start) == _reference_match(text, start)
    assert [c.name for c in parse_reply(text).calls] == _reference_calls(text)


def test_many_small_blocks_before_a_fence_are_scanned_in_linear_time() -> None:
    # The next fence was searched from every block again, to the end of the text: ~20 s here.
    text = "{}" * 150_000 + "\n```\nx\n```"
    took = _cpu(lambda: parse_reply(text))
    assert took < 2.0
    assert parse_reply(text).text == text


def test_the_stream_filter_reads_a_long_call_in_linear_time() -> None:
    # A call writing 60 KB, in 4-character deltas: each delta used to rescan the whole held block (~25 s).
    text = "Writing it.\n" + json.dumps({"tool": "write", "arguments": {"content": "x{" * 30_000}})
    took = _cpu(lambda: _stream(text, 4))
    assert took < 2.0
    assert _stream(text, 4)[1] == parse_reply(text).text == "Writing it."


def test_the_stream_filter_reads_a_long_unclosed_fence_in_linear_time() -> None:
    text = "See:\n```\n" + "line of code\n" * 20_000
    took = _cpu(lambda: _stream(text, 3))
    assert took < 2.0
    assert _stream(text, 3)[1] == text.strip()


def test_the_stream_filter_holds_a_long_run_of_blank_lines_in_linear_time() -> None:
    # A model stuck emitting newlines: the whitespace held before the next prose grew by copying.
    f = StreamFilter()

    def feed() -> None:
        f.feed("Hi")
        for _ in range(1_000_000):
            f.feed("\n")
        f.feed("x")

    took = _cpu(feed)
    assert took < 2.0


def test_a_long_unclosed_block_at_the_end_of_a_stream_is_released_in_linear_time() -> None:
    text = "Cut: " + "{" * 30_000
    took = _cpu(lambda: _stream(text, 1000))
    assert took < 2.0
    assert _stream(text, 1000)[1] == text


def test_arguments_deeper_than_the_json_policy_are_a_call_marked_unparseable() -> None:
    # The native path refuses arguments past agentactors._json's depth; the JSON transport ran them.
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    parsed = parse_reply(f'Storing.\n{{"tool":"put","arguments":{{"x":{deep}}}}}')
    assert parsed.text == "Storing."
    (call,) = parsed.calls
    assert call.name == "put" and call.arguments == {}
    assert call.arguments_error == "unparseable"
    assert call.arguments_error_detail is not None and str(MAX_DEPTH) in call.arguments_error_detail


def test_double_encoded_arguments_past_the_policy_are_marked_unparseable_too() -> None:
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    block = json.dumps({"tool": "put", "arguments": json.dumps({"x": json.loads(deep)})})
    (call,) = parse_reply(block).calls
    assert call.arguments_error == "unparseable" and call.arguments == {}


def test_arguments_within_the_policy_are_not_marked() -> None:
    nested = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    (call,) = parse_reply(f'{{"tool":"put","arguments":{{"x":{nested}}}}}').calls
    assert call.arguments_error is None


def test_an_integer_longer_than_python_converts_is_a_call_marked_unparseable() -> None:
    # The native path marks it so (agentactors._json); here the whole block used to become answer text.
    parsed = parse_reply('Go.\n{"tool":"a","arguments":{"x":' + "9" * 5_000 + "}}")
    assert parsed.text == "Go."
    (call,) = parsed.calls
    assert call.name == "a" and call.arguments_error == "unparseable"
    assert call.arguments_error_detail is not None and "4300 digits" in call.arguments_error_detail


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_block_with_a_non_json_constant_is_not_a_call(constant: str) -> None:
    text = f'Go.\n{{"tool":"a","arguments":{{"x":{constant}}}}}'
    parsed = parse_reply(text)
    assert parsed.calls == ()
    assert parsed.text == text


@pytest.mark.parametrize(
    "block",
    [
        '{"tool":"read","arguments":{"p":"a"},"tool":"delete"}',
        '{"tool":"write","arguments":{"p":"a"},"arguments":{"p":"b"}}',
        '{"\\u0074ool":"read","tool":"delete","arguments":{}}',
    ],
)
def test_a_block_naming_its_tool_or_arguments_twice_is_not_run(block: str) -> None:
    parsed = parse_reply("Go.\n" + block)
    assert parsed.calls == ()
    assert parsed.text == "Go.\n" + block
    assert _stream("Go.\n" + block, 3)[1] == "Go.\n" + block  # and the stream shows it, as the parser keeps it


@pytest.mark.parametrize(
    "block",
    [
        '{"tool":"move","arguments":{"to":"a","to":"b"}}',  # which place the model meant is a guess
        '{"tool":"move","arguments":{"to":{"x":1,"x":2}}}',  # deeper down as well
        '{"tool":"move","arguments":{"list":[{"k":1,"k":2}]}}',  # in an array's object
        '{"tool":"move","arguments":"{\\"to\\":\\"a\\",\\"to\\":\\"b\\"}"}',  # double-encoded
    ],
)
def test_arguments_naming_a_key_twice_are_a_call_marked_unparseable_as_on_the_native_path(block: str) -> None:
    # The native path refuses them (ToolCall.from_raw): Python's parser would keep the last value silently.
    parsed = parse_reply("Moving.\n" + block)
    assert parsed.text == "Moving."
    (call,) = parsed.calls
    assert call.name == "move" and call.arguments == {}
    assert call.arguments_error == "unparseable"
    assert call.arguments_error_detail is not None and "more than once" in call.arguments_error_detail
    native = ToolCall.from_raw("c", "move", '{"to":"a","to":"b"}')
    assert native.arguments_error == "unparseable"


def test_a_key_repeated_outside_the_arguments_does_not_mark_the_call() -> None:
    (call,) = parse_reply('{"tool":"a","arguments":{"x":1},"meta":{"n":1,"n":2}}').calls
    assert call.arguments == {"x": 1} and call.arguments_error is None


def test_a_word_tool_inside_the_arguments_does_not_make_a_call_ambiguous() -> None:
    (call,) = parse_reply('{"tool":"a","arguments":{"note":"the \\"tool\\" key","tool":"x"}}').calls
    assert call.name == "a" and call.arguments == {"note": 'the "tool" key', "tool": "x"}


@pytest.mark.parametrize(
    "text",
    [
        '<think>I could call {"tool":"rm","arguments":{"p":"/"}} but no.</think>Done.',
        '<THINKING>{"tool":"rm","arguments":{}}</thinking>\nDone.',
        '<think type="plan">{"tool":"rm","arguments":{}}</think >Done.',
        'Done. <think>cut off while thinking {"tool":"rm","arguments":{}}',
        'I might call {"tool":"rm","arguments":{}} first.</think>\nDone.',  # the opening tag was the template's
    ],
)
def test_a_call_inside_a_think_block_is_not_run(text: str) -> None:
    parsed = parse_reply(text)
    assert parsed.calls == ()
    assert parsed.text == text.strip()


def test_a_call_after_a_think_block_runs_whatever_the_think_text_holds() -> None:
    # An unbalanced brace and quote in the thinking must not swallow the call after it.
    parsed = parse_reply('<think>hmm { "x</think>\nChecking.\n{"tool":"a","arguments":{"k":1}}')
    assert [(c.name, c.arguments) for c in parsed.calls] == [("a", {"k": 1})]
    assert parsed.text == '<think>hmm { "x</think>\nChecking.'


def test_a_think_tag_inside_a_calls_string_is_part_of_the_call() -> None:
    parsed = parse_reply('Saving.\n{"tool":"save","arguments":{"text":"use <think> tags"}}')
    assert [c.arguments for c in parsed.calls] == [{"text": "use <think> tags"}]
    assert parsed.text == "Saving."


def test_a_closing_tag_after_a_think_block_does_not_hide_the_calls_before_it() -> None:
    # Only a reply with no opening tag at all has its text before a closing tag taken as thinking.
    text = '<think>a</think>Go.\n{"tool":"a","arguments":{}}\nstray </think> text'
    assert [c.name for c in parse_reply(text).calls] == ["a"]


def test_to_wire_messages_joins_many_results_in_linear_time() -> None:
    n = 6_000
    calls = tuple(ToolCall(f"c{i}", "t") for i in range(n))
    msgs = [Message.assistant("", calls), *(Message.tool(f"c{i}", "r" * 2_000, "t") for i in range(n))]
    took = _cpu(lambda: to_wire_messages(msgs))
    wire = to_wire_messages(msgs)
    assert took < 2.0
    assert [m.role for m in wire] == ["assistant", "user"]
    assert wire[1].content.count("[t · call c") == n
    assert wire[1].content.startswith("Tool results:\n\n[t · call c0 · ok]\n" + "r" * 2_000 + "\n\n[t · call c1")


def test_to_wire_messages_keeps_every_results_media_in_order() -> None:
    a, b = Image(data=b"\x89PNG-a", media_type="image/png"), Image(data=b"\x89PNG-b", media_type="image/png")
    msgs = [
        Message.assistant("", (ToolCall("c1", "t"), ToolCall("c2", "t"), ToolCall("c3", "t"))),
        Message.tool("c1", [Text("one"), a], "t"),
        Message.tool("c2", "two", "t"),
        Message.tool("c3", [Text("three"), b], "t"),
    ]
    (_, results) = to_wire_messages(msgs)
    assert results.media == (a, b)
    assert results.content == (
        "Tool results:\n\n[t · call c1 · ok]\none\n\n[t · call c2 · ok]\ntwo\n\n[t · call c3 · ok]\nthree"
    )
