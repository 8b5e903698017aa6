"""Values JSON cannot carry are the tool's ``error``, never sent as something that is not JSON or not the data.

A NaN or an infinity: Python's encoder would write ``NaN`` / ``Infinity``, which no JSON parser reads, with
status ``ok``.  Bytes that are binary data: decoding them with replacement characters (or escaping them as
``"\\u0000\\u0001"``) sends something the model may take for the data.  Both are refused as every other value
JSON cannot carry is (an unserialisable, circular or too deeply nested one): an ``error`` result that says
why.  Bytes that are UTF-8 text stay what they were: that text.  docs/reliability.md ("Tool outcomes").
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agentactors.messages import ToolCall
from agentactors.tools import ToolStatus, render_result, tool
from agentactors.tools.executor import ToolExecutorActor

pytestmark = pytest.mark.anyio

_NOT_A_NUMBER = (
    "Error: TypeError: the tool returned a {} that cannot be sent as JSON (it holds a NaN or an infinity, "
    "which JSON has no number for: return None or a str for it)"
)
_BINARY = (
    "Error: TypeError: the tool returned a {} that cannot be sent as JSON (it holds binary data (bytes that are "
    "not UTF-8 text): return a str, base64-encode the bytes, or return an Image, Document or Audio part)"
)


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, [1.0, math.nan], {"score": math.inf}, {"nested": [{"x": -math.inf}]}],
    ids=["nan", "inf", "-inf", "in-a-list", "in-a-dict", "deep"],
)
def test_render_result_refuses_nan_and_infinity(value: Any) -> None:
    with pytest.raises(TypeError, match="NaN or an infinity"):
        render_result(value)


@pytest.mark.parametrize(
    "value", [b"\x00\x01\x02", b"\x89PNG\r\n\x1a\n", bytearray(b"\xff\xfe"), {"blob": b"ok\x00"}],
    ids=["nul-bytes", "png", "not-utf8", "nested-nul"],
)
def test_render_result_refuses_bytes_that_are_binary_data(value: Any) -> None:
    with pytest.raises(TypeError, match="binary data"):
        render_result(value)


def test_render_result_sends_bytes_that_are_utf8_text_as_that_text() -> None:
    assert json.loads(render_result({"out": b"total 0\n", "name": "café".encode()})) == {
        "out": "total 0\n",
        "name": "café",
    }
    assert json.loads(render_result(b"ls -l\toutput\r\n")) == "ls -l\toutput\r\n"
    assert render_result(1.5) == "1.5" and render_result([0.0, -2.5e300]) == "[0.0, -2.5e+300]"


async def test_a_tool_returning_nan_or_infinity_is_an_error_the_model_can_read() -> None:
    @tool
    async def ratio(kind: str) -> Any:
        return {"nan": math.nan, "inf": math.inf, "dict": {"mean": math.nan}, "ok": 0.5}[kind]

    ex = ToolExecutorActor([ratio])
    results = await ex.execute([ToolCall(k, "ratio", {"kind": k}) for k in ("nan", "inf", "dict", "ok")])
    assert [r.status for r in results] == [ToolStatus.error] * 3 + [ToolStatus.ok]
    assert [r.content for r in results] == [
        _NOT_A_NUMBER.format("float"), _NOT_A_NUMBER.format("float"), _NOT_A_NUMBER.format("dict"), "0.5"
    ]


async def test_a_tool_returning_binary_bytes_is_an_error_and_text_bytes_are_its_text() -> None:
    @tool
    def read(kind: str) -> Any:
        return {"binary": b"\x00\x01", "png": b"\x89PNG\r\n", "text": b"hello\n", "list": [b"\xff"]}[kind]

    ex = ToolExecutorActor([read])
    results = await ex.execute([ToolCall(k, "read", {"kind": k}) for k in ("binary", "png", "text", "list")])
    assert [r.status for r in results] == [ToolStatus.error, ToolStatus.error, ToolStatus.ok, ToolStatus.error]
    assert results[0].content == _BINARY.format("bytes") and results[1].content == _BINARY.format("bytes")
    assert results[2].content == '"hello\\n"'  # bytes are a JSON string, as before
    assert results[3].content == _BINARY.format("list")
