"""Strict mode refuses what OpenAI refuses in a tool entry and in a Responses input item (a 400 in its shape).

Each body below was answered 200 in strict mode, so an encoder that sent it would pass its tests here and
fail against the vendor.  Lenient mode still takes each one (it reads what it can).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors.testing import FakeVendor

pytestmark = pytest.mark.anyio

KEY = "sk-strict-shapes-0123456789"
OPENAI = {"authorization": f"Bearer {KEY}"}
USER = {"role": "user", "content": "hi"}
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}

REFUSED: list[tuple[str, dict[str, Any], str]] = [
    # Chat Completions: a tools entry is {"type": "function", "function": {"name", "parameters"?: object}}.
    (CHAT, {"model": "m", "messages": [USER], "tools": [{"function": {"name": "f"}}]},
     "Missing required parameter: 'tools[0].type'."),
    (CHAT, {"model": "m", "messages": [USER], "tools": [{"type": "bogus", "function": {"name": "f"}}]},
     "Invalid value: 'bogus'. Supported values are: 'function' and 'custom'."),
    (CHAT, {"model": "m", "messages": [USER],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": 5}}]},
     "Invalid type for 'tools[0].function.parameters': expected an object, but got an integer instead."),
    (CHAT, {"model": "m", "messages": [USER],
            "tools": [{"type": "function", "function": {"name": "f", "description": 5}}]},
     "Invalid type for 'tools[0].function.description': expected a string, but got an integer instead."),
    # Responses: a message's content is a string or an array of content parts.
    (RESPONSES, {"model": "m", "input": [{"role": "user", "content": 5}]},
     "Invalid type for 'input[0].content': expected one of a string or array of input content parts, "
     "but got an integer instead."),
    (RESPONSES, {"model": "m", "input": [{"role": "user", "content": None}]},
     "Invalid type for 'input[0].content': expected one of a string or array of input content parts, "
     "but got null instead."),
    (RESPONSES, {"model": "m", "input": [{"role": "user"}]}, "Missing required parameter: 'input[0].content'."),
    (RESPONSES, {"model": "m", "input": [{"role": "user", "content": [5]}]},
     "Invalid type for 'input[0].content[0]': expected an object, but got an integer instead."),
    (RESPONSES, {"model": "m", "input": [{"role": "user", "content": [{"type": "bogus", "text": "x"}]}]},
     "Invalid value: 'bogus'. Supported values are: 'input_text', 'input_image', 'input_file', and 'input_audio'."),
    (RESPONSES, {"model": "m", "input": [{"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}]},
     "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'."),
    (RESPONSES, {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]},
     "Missing required parameter: 'input[0].content[0].text'."),
    (RESPONSES, {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": 5}]}]},
     "Invalid type for 'input[0].content[0].text': expected a string, but got an integer instead."),
    (RESPONSES, {"model": "m", "input": [USER, CALL, {"type": "function_call_output", "call_id": "c1"}]},
     "Missing required parameter: 'input[2].output'."),
    (RESPONSES, {"model": "m", "input": [USER, CALL, {"type": "function_call_output", "call_id": "c1", "output": 5}]},
     "Invalid type for 'input[2].output': expected one of a string or array of input content parts, "
     "but got an integer instead."),
    (RESPONSES, {"model": "m", "input": [USER, {"type": "bogus"}]}, "Invalid value: 'bogus'."),
    (RESPONSES, {"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": 5}]},
     "Invalid type for 'tools[0].parameters': expected an object, but got an integer instead."),
    (RESPONSES, {"model": "m", "input": "x", "max_output_tokens": "a"},
     "Invalid type for 'max_output_tokens': expected an integer, but got a string instead."),
    (RESPONSES, {"model": "m", "input": "x", "max_output_tokens": 5},
     "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 5 instead."),
    (RESPONSES, {"model": "m", "input": "x", "stream": "yes"},
     "Invalid type for 'stream': expected a boolean, but got a string instead."),
]


@pytest.mark.parametrize(("path", "body", "message"), REFUSED,
                         ids=[f"{p.rsplit('/', 1)[-1]}-{json.dumps(b)[-50:]}" for p, b, _ in REFUSED])
async def test_strict_mode_refuses_a_malformed_tool_or_input_item_with_openais_400(
    path: str, body: dict[str, Any], message: str
) -> None:
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        response = await client.post(path, json=body, headers=OPENAI)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error" and set(error) == {"message", "type", "param", "code"}
        assert error["message"].startswith(message), error["message"]
        assert "x-should-retry" not in response.headers
    async with FakeVendor(strict=False) as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        response = await client.post(path, json=body, headers=OPENAI)
        assert response.status_code == 200, response.text


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    # What the encoders send, and the other forms the vendor takes.
    (CHAT, {"model": "m", "messages": [USER],
            "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}]}),
    (CHAT, {"model": "m", "messages": [USER], "tools": [{"type": "function", "function": {"name": "f"}}]}),
    (RESPONSES, {"model": "m", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "x"},
                                     {"type": "input_image", "image_url": "https://example.com/a.png"},
                                     {"type": "input_file", "file_url": "https://example.com/a.pdf"}]},
        {"role": "assistant", "content": "y"},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "y", "annotations": []}]},
        {"role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
        CALL,
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "r"}]},
        {"type": "item_reference", "id": "msg_1"},
    ], "max_output_tokens": 16, "stream": False}),
]


@pytest.mark.parametrize(("path", "body"), ACCEPTED, ids=[f"accepted-{i}" for i in range(len(ACCEPTED))])
async def test_strict_mode_takes_the_well_formed_shapes(path: str, body: dict[str, Any]) -> None:
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        response = await client.post(path, json=body, headers=OPENAI)
        assert response.status_code == 200, response.text


LONG_ID = "toolu_" + "x" * 60  # another vendor's 66-character call id
CHAT_CALL = {"role": "assistant", "content": None,
             "tool_calls": [{"id": LONG_ID, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
OVER_CAP: list[tuple[str, dict[str, Any], str, int]] = [
    (CHAT, {"model": "m", "messages": [USER, CHAT_CALL, {"role": "tool", "tool_call_id": LONG_ID, "content": "r"}]},
     "messages[1].tool_calls[0].id", 40),
    (CHAT, {"model": "m", "messages": [USER, {"role": "tool", "tool_call_id": LONG_ID, "content": "r"}]},
     "messages[1].tool_call_id", 40),
    (RESPONSES, {"model": "m", "input": [USER, {**CALL, "call_id": LONG_ID + "y" * 10},
                                         {"type": "function_call_output", "call_id": LONG_ID, "output": "r"}]},
     "input[1].call_id", 64),
    (RESPONSES, {"model": "m", "input": [USER, {"type": "function_call_output", "call_id": LONG_ID + "y" * 10,
                                                "output": "r"}]},
     "input[1].call_id", 64),
]


@pytest.mark.parametrize(("path", "body", "param", "cap"), OVER_CAP, ids=[f"{p[4:]}-{q}" for p, _, q, _ in OVER_CAP])
async def test_strict_mode_refuses_a_call_id_over_openais_cap_naming_it(
    path: str, body: dict[str, Any], param: str, cap: int
) -> None:
    """A call id over 40 characters (Chat Completions) or 64 (Responses) is OpenAI's 400 string_above_max_length,
    naming the parameter: an encoder that sent a caller's foreign ids as they were passed its tests here."""
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        response = await client.post(path, json=body, headers=OPENAI)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "string_above_max_length" and error["param"] == param
        assert error["message"].startswith(f"Invalid '{param}': string too long. Expected a string with maximum "
                                           f"length {cap}, but got a string with length "), error["message"]
    async with FakeVendor(strict=False) as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        response = await client.post(path, json=body, headers=OPENAI)
        assert response.status_code == 200, response.text
