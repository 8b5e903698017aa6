"""The three wires as the FakeVendor speaks them, read with plain httpx: JSON, SSE, errors, faults.

The shapes are checked against the vendors' documented behaviour and against the
recorded corpus (our answers use no field the real vendor does not send).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors.errors import ErrorKind
from agentactors.providers import classify_http_error
from agentactors.providers.errors import classify_error_body
from agentactors.testing.fakevendor import FakeError, FakeMalformed, FakeReply, FakeToolCall, FakeVendor
from tests.support.fakevendor import WIRES, auth_headers, body, post, sse, url, weather_tool

pytestmark = pytest.mark.anyio

CALLS = (FakeToolCall("get_weather", {"city": "Paris", "days": 3}), FakeToolCall("get_time", {"tz": "CET"}))


@pytest.fixture
async def client() -> Any:
    async with httpx.AsyncClient(timeout=10) as c:
        yield c


# --- JSON answers -------------------------------------------------------------------------------


async def test_openai_json_text_and_tool_calls(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script("Paris.", FakeReply(tool_calls=CALLS))
    text = (await post(client, fake_vendor, "openai", model="gpt-x")).json()
    assert text["object"] == "chat.completion"
    assert text["model"] == "gpt-x"
    choice = text["choices"][0]
    assert choice["message"]["content"] == "Paris."
    assert choice["finish_reason"] == "stop"
    assert text["usage"]["total_tokens"] == text["usage"]["prompt_tokens"] + text["usage"]["completion_tokens"]
    calls = (await post(client, fake_vendor, "openai")).json()["choices"][0]
    assert calls["finish_reason"] == "tool_calls"
    assert calls["message"]["content"] is None  # content is null next to tool calls
    tool_calls = calls["message"]["tool_calls"]
    assert [c["function"]["name"] for c in tool_calls] == ["get_weather", "get_time"]
    assert json.loads(tool_calls[0]["function"]["arguments"]) == {"city": "Paris", "days": 3}
    assert isinstance(tool_calls[0]["function"]["arguments"], str)  # arguments travel as a JSON string
    assert len({c["id"] for c in tool_calls}) == 2
    assert fake_vendor.requests[1].headers["authorization"] == "[REDACTED]"


async def test_anthropic_json_blocks(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script(FakeReply(text="Let me check.", tool_calls=CALLS, reasoning="thinking hard"))
    message = (await post(client, fake_vendor, "anthropic", model="claude-x")).json()
    assert message["type"] == "message"
    assert message["stop_reason"] == "tool_use"
    kinds = [b["type"] for b in message["content"]]
    assert kinds == ["thinking", "text", "tool_use", "tool_use"]
    assert message["content"][0]["signature"]
    assert message["content"][2]["input"] == {"city": "Paris", "days": 3}  # an object, not a string
    assert message["content"][2]["id"].startswith("toolu_")
    assert response_headers_ok(fake_vendor)


def response_headers_ok(fv: FakeVendor) -> bool:
    record = fv.requests[-1]
    return record.headers["x-api-key"] == "[REDACTED]" and record.api_key_present


async def test_gemini_json_parts(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script(FakeReply(tool_calls=CALLS), FakeReply(text="x", stop="max_tokens"))
    answer = (await post(client, fake_vendor, "gemini", model="gemini-x")).json()
    candidate = answer["candidates"][0]
    assert candidate["finishReason"] == "STOP"  # Gemini says STOP even when it called functions
    parts = candidate["content"]["parts"]
    assert [p["functionCall"]["name"] for p in parts] == ["get_weather", "get_time"]
    assert all("id" not in p["functionCall"] for p in parts)  # real Gemini sends no call ids
    assert "thoughtSignature" in parts[0] and "thoughtSignature" not in parts[1]
    base64.b64decode(parts[0]["thoughtSignature"], validate=True)  # standard base64
    assert answer["modelVersion"] == "gemini-x"
    capped = (await post(client, fake_vendor, "gemini")).json()
    assert capped["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert fake_vendor.requests[0].model == "gemini-x"


def _keys(value: Any, prefix: str = "") -> set[str]:
    """Dotted key paths of a JSON value (list items merged; tool arguments are the model's, not the wire's)."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + k)
            if k not in ("input", "args"):
                out |= _keys(v, prefix + k + ".")
    elif isinstance(value, list):
        for item in value:
            out |= _keys(item, prefix)
    return out


@pytest.mark.parametrize(
    ("wire", "samples", "reply"),
    [
        ("openai", ["openai__tool_choice_auto_tool_call__1", "openai__text_system_message__1"], FakeReply(
            tool_calls=CALLS[:1])),
        ("openai", ["openai__text_system_message__1"], FakeReply(text="hi")),
        ("anthropic", ["anthropic__thinking_text_tool_use__1", "anthropic__text_system__1"],
         FakeReply(text="hi", tool_calls=CALLS[:1], reasoning="hmm")),
        ("gemini", ["gemini__tool_config_auto_function_call__1", "gemini__thought_parts__1"],
         FakeReply(tool_calls=CALLS[:1])),
        ("gemini", ["gemini__thought_parts__1"], FakeReply(text="hi", reasoning="hmm")),
    ],
)
async def test_json_answers_use_only_fields_the_real_vendor_sends(
    fake_vendor: FakeVendor, client: httpx.AsyncClient, corpus_dir: Path, wire: str, samples: list[str],
    reply: FakeReply,
) -> None:
    real: set[str] = set()
    for name in samples:
        real |= _keys(json.loads((corpus_dir / f"{name}.json").read_text())["response"]["json"])
    fake_vendor.script(reply)
    ours = _keys((await post(client, fake_vendor, wire)).json())
    assert ours - real == set()


# --- streams ------------------------------------------------------------------------------------


async def test_openai_stream_tool_calls_by_index_usage_chunk_and_done(
    fake_vendor: FakeVendor, client: httpx.AsyncClient
) -> None:
    fake_vendor.script(FakeReply(text="Checking two things.", tool_calls=CALLS, words_per_chunk=1))
    events = await sse(client, fake_vendor, "openai")
    assert events[-1] == ("message", "[DONE]")
    chunks = [data for _, data in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["total_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1])  # include_usage: null until the last chunk
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1])
    assert text == "Checking two things."
    deltas = [d for c in chunks[:-1] for d in c["choices"][0]["delta"].get("tool_calls", [])]
    firsts = [d for d in deltas if "id" in d]
    assert [(d["index"], d["function"]["name"], d["function"]["arguments"]) for d in firsts] == [
        (0, "get_weather", ""), (1, "get_time", "")]
    for d in deltas:
        if "id" not in d:
            assert set(d) == {"index", "function"} and set(d["function"]) == {"arguments"}
    for index, call in enumerate(CALLS):
        raw = "".join(d["function"]["arguments"] for d in deltas if d["index"] == index)
        assert json.loads(raw) == call.arguments
    assert len([d for d in deltas if d["index"] == 0]) > 2  # the arguments really arrive in fragments


async def test_openai_stream_without_include_usage_has_no_usage_chunk(
    fake_vendor: FakeVendor, client: httpx.AsyncClient
) -> None:
    events = await sse(client, fake_vendor, "openai", include_usage=False)
    chunks = [data for _, data in events[:-1]]
    assert all("usage" not in c and c["choices"] for c in chunks)


async def test_anthropic_stream_event_sequence(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script(FakeReply(text="Let me look.", tool_calls=CALLS[:1], reasoning="plan", input_tokens=42))
    events = await sse(client, fake_vendor, "anthropic")
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert "ping" in names
    assert all(name == data["type"] for name, data in events)
    starts = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert deltas[[x["type"] for x in deltas].index("signature_delta") - 1]["type"] == "thinking_delta"
    json_parts = [x["partial_json"] for x in deltas if x["type"] == "input_json_delta"]
    assert json_parts[0] == "" and json.loads("".join(json_parts)) == {"city": "Paris", "days": 3}
    assert events[0][1]["message"]["usage"]["input_tokens"] == 42
    final = events[-2][1]
    assert final["delta"]["stop_reason"] == "tool_use" and final["usage"]["output_tokens"] > 0


async def test_anthropic_stream_pads_data_lines_like_the_real_service(
    fake_vendor: FakeVendor, client: httpx.AsyncClient
) -> None:
    response = await post(client, fake_vendor, "anthropic", stream=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "} \n" in response.text or "}  \n" in response.text  # trailing spaces after the JSON


async def test_gemini_stream_chunks(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script(FakeReply(text="one two three four", tool_calls=CALLS, words_per_chunk=1))
    raw = await post(client, fake_vendor, "gemini", stream=True)
    assert raw.text.count("\r\n\r\n") == raw.text.count("data: ")  # CRLF separators
    assert "[DONE]" not in raw.text
    fake_vendor.script(FakeReply(text="one two three four", tool_calls=CALLS, words_per_chunk=1))
    chunks = [data for _, data in await sse(client, fake_vendor, "gemini")]
    finishes = [c["candidates"][0].get("finishReason") for c in chunks]
    assert finishes[:-1] == [None] * (len(chunks) - 1) and finishes[-1] == "STOP"
    counts = [c["usageMetadata"]["candidatesTokenCount"] for c in chunks]
    assert counts == sorted(counts)  # running totals
    call_chunks = [c for c in chunks if any("functionCall" in p for p in c["candidates"][0]["content"]["parts"])]
    assert len(call_chunks) == 1  # calls arrive whole, together
    assert chunks[-1]["candidates"][0]["content"]["parts"] == [{"text": ""}]
    text = "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert text == "one two three four"


async def test_gemini_stream_without_alt_sse_is_a_json_array(
    fake_vendor: FakeVendor, client: httpx.AsyncClient
) -> None:
    response = await client.post(
        f"{fake_vendor.base_url}/v1beta/models/g:streamGenerateContent", json=body("gemini"),
        headers=auth_headers("gemini"),
    )
    chunks = response.json()
    assert isinstance(chunks, list) and chunks[-1]["candidates"][0]["finishReason"] == "STOP"


# --- errors -------------------------------------------------------------------------------------

_EXPECTED_KIND = {400: ErrorKind.request, 401: ErrorKind.account, 404: ErrorKind.account,
                  429: ErrorKind.transient, 500: ErrorKind.transient, 503: ErrorKind.transient,
                  529: ErrorKind.transient}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("status", sorted(_EXPECTED_KIND))
async def test_error_bodies_have_the_wire_shape_and_classify(
    fake_vendor: FakeVendor, client: httpx.AsyncClient, wire: str, status: int
) -> None:
    fake_vendor.script(FakeError(status, retry_after=7 if status == 429 else None))
    response = await post(client, fake_vendor, wire)
    assert response.status_code == status
    payload = response.json()
    if wire == "anthropic":
        assert payload["type"] == "error" and set(payload["error"]) == {"type", "message"}
    elif wire == "openai":
        assert set(payload["error"]) == {"message", "type", "param", "code"}
    else:
        assert payload["error"]["code"] == status and payload["error"]["status"].isupper()
    err = classify_http_error(status, response.headers, response.content, provider=wire)
    assert err.kind is _EXPECTED_KIND[status]
    if status == 429:
        assert err.retry_after == 7
        assert response.headers["retry-after"] == "7"
    assert fake_vendor.requests[0].outcome == "error" and fake_vendor.requests[0].status == status


async def test_gemini_429_carries_retry_info(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script(FakeError(429, retry_after=37))
    response = await post(client, fake_vendor, "gemini")
    details = response.json()["error"]["details"]
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"} in details
    err = classify_http_error(429, {}, response.content, provider="gemini")  # the body alone says 37 s
    assert err.retry_after == 37


async def test_error_headers_and_overrides(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script(
        FakeError(429, retry_after_ms=250, should_retry=False, headers={"X-Extra": "1"}),
        FakeError(429, code="insufficient_quota", message="You exceeded your current quota."),
        FakeError(503, body="upstream connect error"),
    )
    first = await post(client, fake_vendor, "openai")
    assert first.headers["retry-after-ms"] == "250" and first.headers["x-should-retry"] == "false"
    assert first.headers["x-extra"] == "1"
    err = classify_http_error(429, first.headers, first.content, provider="openai")
    assert err.retry_after == 0.25 and err.retryable is False
    quota = await post(client, fake_vendor, "openai")
    assert quota.json()["error"]["code"] == "insufficient_quota"
    assert classify_http_error(429, quota.headers, quota.content, provider="openai").kind is ErrorKind.account
    raw = await post(client, fake_vendor, "openai")
    assert raw.status_code == 503 and raw.text == "upstream connect error"


# --- in-band errors, cuts, malformed ------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_in_band_stream_error(fake_vendor: FakeVendor, client: httpx.AsyncClient, wire: str) -> None:
    status = 529 if wire == "anthropic" else 503
    fake_vendor.script(FakeReply(text="a b c d e f", words_per_chunk=1, stream_error=FakeError(status),
                                 stream_error_after=2))
    events = await sse(client, fake_vendor, wire)
    name, data = events[-1]
    assert "error" in data
    if wire == "anthropic":
        assert name == "error" and data["error"]["type"] == "overloaded_error"
    assert classify_error_body(data, provider=wire).kind is ErrorKind.transient
    texts = [e for e in events[:-1] if _delta_text(wire, e[1])]
    assert len(texts) == 2
    assert fake_vendor.requests[0].outcome == "stream_error"
    # Asked without streaming, the same reply is a plain HTTP error.
    fake_vendor.script(FakeReply(text="x", stream_error=FakeError(status)))
    assert (await post(client, fake_vendor, wire)).status_code == status


def _delta_text(wire: str, data: Any) -> str:
    if not isinstance(data, dict):
        return ""
    if wire == "openai":
        choices = data.get("choices") or [{}]
        return str(choices[0].get("delta", {}).get("content") or "")
    if wire == "anthropic":
        return str(data.get("delta", {}).get("text") or "") if data.get("type") == "content_block_delta" else ""
    parts = (data.get("candidates") or [{}])[0].get("content", {}).get("parts", [])
    return "".join(p.get("text", "") for p in parts)


@pytest.mark.parametrize("wire", WIRES)
async def test_cut_after_n_content_chunks(fake_vendor: FakeVendor, client: httpx.AsyncClient, wire: str) -> None:
    fake_vendor.script(FakeReply(text="a b c d e f", words_per_chunk=1, cut_after=3))
    seen: list[str] = []
    with pytest.raises(httpx.RemoteProtocolError):
        async with client.stream("POST", url(fake_vendor, wire, stream=True), json=body(wire, stream=True),
                                 headers=auth_headers(wire)) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                    text = _delta_text(wire, json.loads(line[5:]))
                    if text:
                        seen.append(text)
    assert "".join(seen).split() == ["a", "b", "c"]
    record = fake_vendor.requests[0]
    assert record.outcome == "cut" and not record.disconnected


@pytest.mark.parametrize("wire", WIRES)
async def test_a_cut_always_precedes_the_terminal_event(
    fake_vendor: FakeVendor, client: httpx.AsyncClient, wire: str
) -> None:
    fake_vendor.script(FakeReply(text="short", cut_after=50))
    with pytest.raises(httpx.RemoteProtocolError):
        await post(client, fake_vendor, wire, stream=True)


async def test_cut_json_answer(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script(FakeReply(text="a long enough answer", cut_after=0))
    with pytest.raises(httpx.RemoteProtocolError):
        await post(client, fake_vendor, "anthropic")


async def test_malformed_json_and_stream(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script(FakeMalformed(), FakeMalformed(body="{not json"))
    plain = await post(client, fake_vendor, "openai")
    assert plain.status_code == 200
    with pytest.raises(ValueError, match=r"Expecting|Unterminated"):
        json.loads(plain.text)
    streamed = await post(client, fake_vendor, "anthropic", stream=True)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert "data: {not json" in streamed.text
    assert [r.outcome for r in fake_vendor.requests] == ["malformed", "malformed"]


async def test_latency_is_applied(client: httpx.AsyncClient) -> None:
    async with FakeVendor(latency=0.05) as fv:
        fv.script(FakeReply(text="fast", latency=0.0), "slow")
        await post(client, fv, "openai")
        first = fv.requests[0]
        await post(client, fv, "openai")
        second = fv.requests[1]
    assert first.completed_at is not None and second.completed_at is not None
    assert first.completed_at - first.received_at < 0.05 <= second.completed_at - second.received_at


async def test_tool_spec_is_read_from_each_wire(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    for wire in WIRES:
        await post(client, fake_vendor, wire, tools=[weather_tool()])
    for record in fake_vendor.requests:
        assert record.conversation is not None
        assert [t.name for t in record.conversation.tools] == ["get_weather"]
        assert record.conversation.tools[0].parameters["required"] == ["city", "days"]
        assert record.conversation.last_user_text == "What is the capital of France?"
