"""Statuses, results, the texts the model reads: truncation marker and head, refusal, errors."""

import dataclasses
import datetime as dt
import enum
import json
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.errors import register_secret
from agentactors.messages import Message
from agentactors.parts import Image
from agentactors.tools import ResultCeiling, ToolResult, ToolStatus, render_result, truncate, truncation_marker
from agentactors.tools.results import (
    ValidationIssue,
    denied_text,
    encodable_text,
    format_error,
    invalid_arguments_text,
    refusal_text,
    result_of,
    timeout_text,
    truncated_head_length,
    unknown_tool_text,
    unreadable_arguments_text,
)


def test_status_is_a_closed_enum() -> None:
    assert [s.value for s in ToolStatus] == ["ok", "error", "invalid", "denied", "timeout", "cancelled"]
    assert ToolStatus("ok") is ToolStatus.ok
    with pytest.raises(ValueError):
        ToolStatus("weird")


def test_tool_result_fields_and_validation() -> None:
    r = ToolResult("c1", "t", ToolStatus.ok, "hello", 5, 0.25)
    assert (r.call_id, r.name, r.status, r.content, r.size_chars, r.duration) == ("c1", "t", "ok", "hello", 5, 0.25)
    assert r.ok and not r.is_error and not r.truncated and not r.refused and r.original_chars is None
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        r.content = "x"  # type: ignore[misc]
    assert ToolResult("c", "t", "error", "x", 1, 0).status is ToolStatus.error  # the str value converts
    assert ToolResult.of("c", "t", ToolStatus.denied, "abc").size_chars == 3
    msg = ToolResult.of("c9", "t", ToolStatus.error, "boom", 0.1).to_message()
    assert msg == Message.tool("c9", "boom", "t", is_error=True)
    assert ToolResult.of("c9", "t", ToolStatus.ok, "fine").to_message().is_error is False
    bad = [
        (("c", "t", "nope", "x", 1, 0.0), ValueError),
        (("c", "", "ok", "x", 1, 0.0), ValueError),
        ((1, "t", "ok", "x", 1, 0.0), TypeError),
        (("c", "t", "ok", b"x", 1, 0.0), TypeError),
        (("c", "t", "ok", "x", -1, 0.0), ValueError),
        (("c", "t", "ok", "x", 1.0, 0.0), ValueError),
        (("c", "t", "ok", "x", 1, -0.1), ValueError),
        (("c", "t", "ok", "x", 1, "0"), ValueError),
    ]
    for args, error in bad:
        with pytest.raises(error):
            ToolResult(*args)  # type: ignore[arg-type]


class Mood(enum.Enum):
    happy = "happy"


@attrs.frozen
class Row:
    id: int
    mood: Mood


@dataclasses.dataclass
class Page:
    rows: list[Row]
    at: dt.date


def test_render_result() -> None:
    text = "already text, {not json}"
    assert render_result(text) is text
    assert render_result(None) == "null"
    assert render_result({"a": [1, 2.5, True]}) == '{"a": [1, 2.5, true]}'
    assert render_result("é") == "é" and render_result(["é"]) == '["é"]'
    page = Page([Row(1, Mood.happy)], dt.date(2024, 1, 2))
    assert json.loads(render_result(page)) == {"rows": [{"id": 1, "mood": "happy"}], "at": "2024-01-02"}
    u = uuid.UUID(int=5)
    assert json.loads(render_result({"u": u, "p": Path("/x"), "s": {2, 1}, "b": b"hi"})) == {
        "u": str(u),
        "p": "/x",
        "s": [1, 2],
        "b": "hi",
    }
    with pytest.raises(TypeError):
        render_result(object())


def test_truncation_marker_text() -> None:
    assert (
        truncation_marker("search", 191_245, 7_900)
        == "[truncated: search returned 191,245 chars; showing the first 7,900 of them]"
    )


def test_truncate_scenario_10() -> None:
    payload = "".join(chr(ord("a") + i % 26) for i in range(191_245))
    out = truncate("search", payload, 8000)
    marker, head = out.split("\n", 1)
    assert len(out) <= 8000
    assert head == payload[: len(head)]
    assert marker == truncation_marker("search", 191_245, len(head))
    # The head is the longest that fits: one more char would break the cap.
    assert len(truncation_marker("search", 191_245, len(head) + 1)) + 1 + len(head) + 1 > 8000
    assert len(out) == 8000
    assert marker == "[truncated: search returned 191,245 chars; showing the first 7,924 of them]"


def test_truncate_under_or_at_cap_is_the_same_object() -> None:
    s = "x" * 100
    assert truncate("t", s, 100) is s
    assert truncate("t", s, 1000) is s


def test_truncate_tiny_cap_keeps_the_invariant() -> None:
    out = truncate("tool", "y" * 500, 10)
    assert len(out) == 10 and out.startswith("[truncated")
    assert truncated_head_length("tool", 500, 10) == 0


@settings(max_examples=150, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=120_000),
    cap=st.integers(min_value=1, max_value=130_000),
    name=st.sampled_from(["t", "search", "a" * 64]),
)
def test_truncate_properties(size: int, cap: int, name: str) -> None:
    content = "z" * (size - 1) + "!"
    out = truncate(name, content, cap)
    assert len(out) <= cap
    if size <= cap:
        assert out is content
        return
    shown = truncated_head_length(name, size, cap)
    marker = truncation_marker(name, size, shown)
    if len(marker) + 1 <= cap:
        assert out == marker + "\n" + content[:shown]
        # maximal: showing one more char would not fit
        assert len(truncation_marker(name, size, shown + 1)) + 2 + shown > cap


def test_refusal_text_exact() -> None:
    ceiling = ResultCeiling(20_000, narrow_by=("limit", "since"))
    assert refusal_text("search", 191_245, ceiling) == (
        "Result too large: search returned 191,245 chars, over its 20,000-char ceiling. No data was returned. "
        "Call it again with narrower parameters, e.g. 'limit', 'since'."
    )
    assert refusal_text("t", 12, ResultCeiling(10)) == (
        "Result too large: t returned 12 chars, over its 10-char ceiling. No data was returned. "
        "Call it again with narrower parameters."
    )


def test_error_and_status_texts() -> None:
    register_secret("canary-9f8e7d6c5b4a")
    assert format_error(ValueError("bad canary-9f8e7d6c5b4a here")) == "Error: ValueError: bad [REDACTED] here"
    assert format_error(KeyError()) == "Error: KeyError"
    assert timeout_text("slow", 2.5).startswith("Tool 'slow' timed out after 2.5 s")
    assert timeout_text("slow", 60.0).startswith("Tool 'slow' timed out after 60 s")
    denied = denied_text("rm", "destructive tools are off.")
    assert "refused" in denied and "tool policy" in denied and "destructive tools are off" in denied
    assert "Do not call 'rm' again" in denied
    assert "no reason given" in denied_text("rm", "  ")
    unknown = unknown_tool_text("serach", ["search", "fetch"])
    assert "'serach'" in unknown and "'search', 'fetch'" in unknown and "not executed" in unknown
    assert "(none)" in unknown_tool_text("x", [])


def test_invalid_arguments_text_lists_at_most_ten() -> None:
    issues = [ValidationIssue(f"p{i}", "an integer", "a string") for i in range(13)]
    text = invalid_arguments_text("t", issues, "Fix it.")
    lines = text.splitlines()
    assert lines[0] == "Invalid arguments for tool 't' — the call was not executed."
    assert lines[1] == "- p0: expected an integer, got a string"
    assert len([line for line in lines if line.startswith("- p")]) == 10
    assert lines[-2] == "- ... and 3 more issues" and lines[-1] == "Fix it."
    one_more = invalid_arguments_text("t", issues[:11], "Fix it.")
    assert "- ... and 1 more issue\n" in one_more


def test_unreadable_arguments_text() -> None:
    cut = unreadable_arguments_text("t", "unparseable", "finish_reason=length", ("a",), "Fix.")
    assert cut.startswith("Invalid arguments for tool 't' — the call was not executed.\n")
    assert "(finish_reason=length)" in cut and "max_tokens" in cut and "split the call" in cut
    assert cut.endswith("\nFix.")
    empty = unreadable_arguments_text("t", "empty", None, ("a", "b"), "Fix.")
    assert "No arguments were sent" in empty and "a, b" in empty


# --- rendering and formatting never fail in a way the executor cannot answer -------------------


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def test_render_result_raises_type_error_only_whatever_goes_wrong() -> None:
    circular: list[object] = []
    circular.append(circular)

    class Dumps:
        def model_dump(self, mode: str) -> object:
            raise RuntimeError("a pydantic-like failure")

    with pytest.raises(TypeError, match="nested too deeply"):
        render_result(_nested(100_000))
    with pytest.raises(TypeError, match="Circular reference"):
        render_result(circular)
    with pytest.raises(TypeError, match="converting it raised RuntimeError"):
        render_result(Dumps())
    with pytest.raises(TypeError, match="not JSON serialisable"):
        render_result(object())


def test_render_result_hands_back_a_plain_str_for_a_str_subclass() -> None:
    class Loud(str):
        def __str__(self) -> str:
            return "LOUD"

    rendered = render_result(Loud("quiet"))
    assert rendered == "quiet" and type(rendered) is str


def test_format_error_never_raises() -> None:
    class Unreadable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    class Odd(BaseException):
        pass

    assert format_error(Unreadable()) == "Error: Unreadable (its message could not be read)"
    assert format_error(SystemExit(2)) == "Error: SystemExit: 2"
    assert format_error(Odd()) == "Error: Odd"
    assert format_error(KeyboardInterrupt()) == "Error: KeyboardInterrupt"


def test_encodable_text_repairs_surrogates_and_leaves_the_rest_alone() -> None:
    fine = "naïve — ☕ 😀"
    assert encodable_text(fine) == (fine, 0) and encodable_text(fine)[0] is fine
    assert encodable_text("plain ascii") == ("plain ascii", 0)
    fixed, count = encodable_text("a\udce9b \ud83d\ude00 c\ud800")
    assert (fixed, count) == ("a\ufffdb 😀 c\ufffd", 4)
    fixed.encode("utf-8")
    assert encodable_text("\ufffd already")[1] == 0


_PNG = Image(data=b"\x89PNG", media_type="image/png")


@pytest.mark.parametrize(
    "fields",
    [
        ("c1", "add", ToolStatus.ok, "5", 0.25, False, False, 1, ()),
        ("c2", "fetch", ToolStatus.error, "Error: boom\nHint: retry", 0.0, True, False, 9000, ()),
        ("c3", "draw", ToolStatus.ok, "the chart:", 1.5, False, False, 10, (_PNG,)),
        ("c4", "big", ToolStatus.invalid, "refused", 0.0, False, True, 50_000, ()),
    ],
)
def test_result_of_is_the_constructors_result_field_by_field(fields: tuple[Any, ...]) -> None:
    # The executor answers every call through result_of: every field must be the constructor's.
    call_id, name, status, content, duration, truncated, refused, original, parts = fields
    fast = result_of(*fields)
    built = ToolResult(call_id, name, status, content, len(content), duration, truncated, refused, original, parts)
    assert fast == built
    assert attrs.asdict(fast, recurse=False) == attrs.asdict(built, recurse=False)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ((3, "add", ToolStatus.ok, "5", 0.0, False, False, 1, ()), TypeError),
        (("c1", "", ToolStatus.ok, "5", 0.0, False, False, 1, ()), ValueError),
        (("c1", "add", "nope", "5", 0.0, False, False, 1, ()), ValueError),
        (("c1", "add", ToolStatus.ok, b"5", 0.0, False, False, 1, ()), TypeError),
        (("c1", "add", ToolStatus.ok, None, 0.0, False, False, 1, ()), TypeError),  # the constructor's own error
        (("c1", "add", ToolStatus.ok, "5", -1.0, False, False, 1, ()), ValueError),
        (("c1", "add", ToolStatus.ok, "5", True, False, False, 1, ()), ValueError),
    ],
)
def test_result_of_refuses_what_the_constructor_refuses(fields: tuple[Any, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        result_of(*fields)
