"""The JSON-fallback transport: contract text, string-aware block scanning, and the stream filter."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.loop.json_transport import StreamFilter, contract_text, match_brace, parse_reply
from agentactors.messages import ToolSpec


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
