"""The JSON-fallback transport: a call cut off at ``max_tokens`` is a call marked unparseable, never the answer.

As on the native transport (the wires mark a call whose arguments ``max_tokens`` cut off ``"unparseable"``, with
a detail saying so): the tool does not run, the model reads why, and the run goes on — it does not end ``ok``
with half a JSON block as its answer.  Both the whole reply (``parse_reply``) and the stream (``StreamFilter``).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.agent.core import Agent
from agentactors.loop.json_transport import StreamFilter, parse_reply
from agentactors.messages import LLMResponse, StopReason
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool

CUT = "the arguments were cut off at max_tokens; ask for less or split the call"


@pytest.mark.parametrize(
    ("reply", "name", "raw"),
    [
        ('Adding.\n{"tool":"add","arguments":{"a":1,"b', "add", '{"a":1,"b'),
        ('Adding.\n{"tool": "add", "arguments": ', "add", None),
        ('Adding.\n{"tool": "add"', "add", None),
        ('Adding.\n```json\n{"tool":"add","arguments":{"a":1', "add", '{"a":1'),
        ('Adding.\n{"tool":"add","arguments":{"a":1,"then":{"tool":"rm","arguments":{}}', "add",
         '{"a":1,"then":{"tool":"rm","arguments":{}}'),
    ],
)
def test_a_call_cut_at_max_tokens_is_a_call_marked_unparseable(reply: str, name: str, raw: str | None) -> None:
    parsed = parse_reply(reply, id_prefix="s1_", cut=True)
    assert parsed.text == "Adding."
    [call] = parsed.calls
    assert (call.id, call.name, call.arguments, call.raw_arguments) == ("s1_1", name, {}, raw)
    assert (call.arguments_error, call.arguments_error_detail) == ("unparseable", CUT)


@pytest.mark.parametrize("reply", ['Adding.\n{"tool":"ad', 'Adding.\n{"to', 'Adding.\n{"arguments":{"a":1'])
def test_a_call_cut_before_its_name_is_complete_is_still_not_an_answer(reply: str) -> None:
    parsed = parse_reply(reply, cut=True)
    assert parsed.text == "Adding."
    [call] = parsed.calls
    assert call.arguments_error == "unparseable" and call.arguments_error_detail == CUT


def test_calls_finished_before_the_cut_stay_calls() -> None:
    parsed = parse_reply('Two.\n{"tool":"a","arguments":{"k":1}}\n{"tool":"b","arguments":{"k', cut=True)
    assert [(c.name, c.arguments, c.arguments_error) for c in parsed.calls] == [
        ("a", {"k": 1}, None), ("b", {}, "unparseable")
    ]
    assert parsed.text == "Two."


@pytest.mark.parametrize(
    "reply",
    [
        "The set is {",  # a brace that starts no call
        "Cut in prose {x",
        '<think>{"tool":"add","arguments":{"a":1',  # thinking, not a call
        'Done.\n{"tool":"add","arguments":{"a":1}}',  # finished: an ordinary call
    ],
)
def test_what_is_no_cut_call_is_read_as_before(reply: str) -> None:
    assert parse_reply(reply, cut=True) == parse_reply(reply)


def test_without_the_cut_an_unclosed_block_stays_text() -> None:
    reply = 'Adding.\n{"tool":"add","arguments":{"a":1,"b'
    assert parse_reply(reply) == parse_reply(reply, cut=False)
    assert parse_reply(reply).calls == () and parse_reply(reply).text == reply


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_the_stream_shows_no_part_of_a_cut_call(size: int) -> None:
    reply = 'Adding now.\n{"tool":"add","arguments":{"a":1,"b":"}{'
    f = StreamFilter()
    shown = "".join(f.feed(reply[i : i + size]) for i in range(0, len(reply), size)) + f.finish(cut=True)
    assert shown == "Adding now." == parse_reply(reply, cut=True).text


def test_the_stream_without_the_cut_shows_the_unclosed_block_as_before() -> None:
    f = StreamFilter()
    assert f.feed('cut {"tool":"a","argu') == "cut"
    assert f.finish(cut=False) == ' {"tool":"a","argu'


# --- whole runs: the cut call is fed back, the model asked again -------------------------------------

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_a_run_whose_call_is_cut_at_max_tokens_asks_again_instead_of_answering(stream: bool) -> None:
    cut = LLMResponse('Adding.\n{"tool":"add","arguments":{"a":1,"b', stop_reason=StopReason.max_tokens)
    provider = ScriptedProvider([cut, '{"tool":"add","arguments":{"a":1,"b":2}}', "3."], carries_tools=False)
    tokens: list[str] = []
    result = await Agent(provider, tools=[add]).run("1+2?", on_token=tokens.append if stream else None)
    assert result.ok and result.content == "3." and result.steps == 3
    first = result.messages[1]  # after the user message: the cut step's assistant message, then its result
    assert first.role == "assistant" and first.content == "Adding."
    assert first.tool_calls[0].arguments_error == "unparseable"
    fed_back = result.messages[2]
    assert fed_back.role == "tool" and fed_back.is_error and "cut off at max_tokens" in fed_back.content
    assert [c.arguments for c in result.tool_calls if c.arguments_error is None] == [{"a": 1, "b": 2}]
    if stream:
        assert '"tool"' not in "".join(tokens) and "{" not in "".join(tokens)


_piece = st.text(alphabet=st.sampled_from(list('abc {}`\n"\\:,')), max_size=15)


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(_piece, st.builds(lambda n, v: json.dumps({"tool": n, "arguments": {"v": v}}),
                                    st.sampled_from(["a", "b"]), _piece)),
        max_size=5,
    ),
    keep=st.floats(0, 1),
    size=st.integers(1, 6),
)
def test_a_stream_cut_anywhere_shows_what_the_parser_keeps(pieces: list[str], keep: float, size: int) -> None:
    text = "\n".join(pieces)
    text = text[: int(len(text) * keep)]
    parsed = parse_reply(text, cut=True)
    f = StreamFilter()
    shown = "".join(f.feed(text[i : i + size]) for i in range(0, len(text), size)) + f.finish(cut=True)
    assert shown.count('"tool"') == parsed.text.count('"tool"')
    assert "".join(shown.split()) == "".join(parsed.text.split())


def test_a_call_cut_right_after_its_first_quote_is_still_a_cut_call() -> None:
    # Found in review: '{"' (one character short of '{"t') stayed text, and the half block could be the answer.
    parsed = parse_reply('Let me check. {"', cut=True)
    assert parsed.text.strip() == "Let me check."
    (call,) = parsed.calls
    assert call.arguments_error == "unparseable"
    # A bare brace is not a call begun.
    assert parse_reply("Let me check. {", cut=True).calls == ()
