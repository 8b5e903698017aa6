"""The Responses wire marks a ``function_call`` cut off at ``max_output_tokens`` as the Chat wire marks one cut at
``finish_reason: "length"``: never run with empty (default) arguments, streamed or not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentactors.messages import LLMRequest, LLMResponse, Message, StopReason, StreamEvent, ToolCallEnd, ToolSpec
from agentactors.providers.responses import ResponsesWire

NOW_TOOL = ToolSpec("now", "The time.", {"type": "object", "properties": {}})  # requires nothing
PATH_TOOL = ToolSpec(
    "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
)
REQUEST = LLMRequest([Message.user("hi")], tools=[NOW_TOOL, PATH_TOOL])
WIRE = ResponsesWire()


def _call(call_id: str, name: str, arguments: str | None, status: str = "completed") -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
                            "status": status}
    if arguments is not None:
        item["arguments"] = arguments
    return item


def _body(output: list[dict[str, Any]], *, cut: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "resp_1", "model": "gpt-5", "status": "incomplete" if cut else "completed",
                            "output": output, "usage": {"input_tokens": 3, "output_tokens": 16}}
    if cut:
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    return body


def decode(body: dict[str, Any]) -> LLMResponse:
    return WIRE.decode_response(body, request=REQUEST, model="gpt-5", provider="p")


def _assert_cut(call: Any) -> None:
    assert (call.arguments, call.arguments_error) == ({}, "unparseable")
    assert call.arguments_error_detail is not None and "max_output_tokens" in call.arguments_error_detail


@pytest.mark.parametrize("arguments", ["", None], ids=["empty", "absent"])
@pytest.mark.parametrize("item_status", ["completed", "incomplete", "in_progress"])
def test_a_call_with_no_arguments_in_an_incomplete_response_is_marked_cut(arguments: str | None,
                                                                         item_status: str) -> None:
    """``status: incomplete`` and the last call's arguments are "" (cut right after its name, even for a tool that
    requires nothing: a finished call with none says "{}"): marked, never run with its defaults."""
    response = decode(_body([_call("c1", "now", arguments, item_status)], cut=True))
    (call,) = response.tool_calls
    _assert_cut(call)
    assert response.stop_reason is StopReason.max_tokens


def test_only_the_cut_call_is_marked_and_a_finished_answer_is_left_alone() -> None:
    output = [_call("c0", "now", "{}"), _call("c1", "now", "")]
    first, cut = decode(_body(output, cut=True)).tool_calls
    assert (first.arguments, first.arguments_error) == ({}, None)
    _assert_cut(cut)
    # The same items in a completed response: a call with no arguments is a call with no arguments.
    assert [c.arguments_error for c in decode(_body(output, cut=False)).tool_calls] == [None, None]


def test_an_item_that_says_it_is_incomplete_is_cut_wherever_it_is() -> None:
    """A ``function_call`` item whose own ``status`` is ``incomplete`` was cut, even before another item."""
    output = [_call("c0", "now", "", "incomplete"), {"type": "message", "content": []}]
    (call,) = decode(_body(output, cut=True)).tool_calls
    _assert_cut(call)


def test_cut_partial_arguments_say_max_output_tokens() -> None:
    (call,) = decode(_body([_call("c1", "read_file", '{"path": "a.')], cut=True)).tool_calls
    _assert_cut(call)
    assert call.raw_arguments == '{"path": "a.'


# --- streamed -----------------------------------------------------------------------------------


def feed(events: list[dict[str, Any]]) -> tuple[list[StreamEvent], LLMResponse]:
    decoder = WIRE.stream_decoder(request=REQUEST, model="gpt-5", provider="p")
    out: list[StreamEvent] = []
    for e in events:
        out.extend(decoder.feed(e["type"], json.dumps(e)))
    return out, decoder.finish()


def _added(item: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index,
            "item": {**item, "arguments": "", "status": "in_progress"}}


def _done(item: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


@pytest.mark.parametrize("item_status", ["incomplete", "completed"])
def test_a_streamed_call_cut_before_any_argument_ends_marked(item_status: str) -> None:
    """The end the stream hands out and the final answer's call agree, and both are marked cut: the item's
    ``output_item.done`` may say ``completed`` with "" before ``response.incomplete`` says the answer was cut."""
    item = _call("c1", "now", "", item_status)
    events, final = feed([_added(item), _done(item), {"type": "response.incomplete",
                                                      "response": _body([item], cut=True)}])
    ends = [e.call for e in events if isinstance(e, ToolCallEnd)]
    assert ends == list(final.tool_calls)
    _assert_cut(final.tool_calls[0])
    assert final.stop_reason is StopReason.max_tokens


def test_a_streamed_call_never_done_is_ended_marked_by_the_terminal_event() -> None:
    item = _call("c1", "now", "", "in_progress")
    events, final = feed([_added(item), {"type": "response.incomplete", "response": _body([item], cut=True)}])
    ends = [e.call for e in events if isinstance(e, ToolCallEnd)]
    assert ends == list(final.tool_calls)
    _assert_cut(ends[0])


def test_a_streamed_call_with_no_arguments_in_a_completed_answer_is_not_marked() -> None:
    item = _call("c1", "now", "")
    events, final = feed([_added(item), _done(item), {"type": "response.completed",
                                                      "response": _body([item], cut=False)}])
    ends = [e.call for e in events if isinstance(e, ToolCallEnd)]
    assert ends == list(final.tool_calls) and ends[0].arguments_error is None


def test_a_streamed_whole_call_ends_when_its_item_is_done() -> None:
    """A call with arguments still ends at its ``output_item.done`` (before the terminal event), as before."""
    item = _call("c1", "read_file", '{"path":"a"}')
    decoder = WIRE.stream_decoder(request=REQUEST, model="gpt-5", provider="p")
    decoder.feed("response.output_item.added", json.dumps(_added(item)))
    events = decoder.feed("response.output_item.done", json.dumps(_done(item)))
    assert [e.call.arguments for e in events if isinstance(e, ToolCallEnd)] == [{"path": "a"}]


@pytest.mark.parametrize("status", [[], {}, 5, None])
def test_an_item_status_that_is_no_string_says_nothing(status: Any) -> None:
    # Found by the decoding property test: a list as an item's status raised TypeError (unhashable) out of the
    # decoder, where a vendor's odd field must be a typed error or read as absent.
    item = {**_call("c1", "now", "{}"), "status": status}
    (call,) = decode(_body([item], cut=False)).tool_calls
    assert call.arguments_error is None
