"""The FakeVendor's control API: a test in any language steers the fake over plain HTTP.

A Go/Node team could only echo, auto-call tools or fail at a random rate: nothing said "the vendor returns
429 on the next call".  Here every control call is made with httpx as a plain HTTP client (no Python API of
the fake's), and what it scripts is met by agentactors' own providers and agents, as a service would meet it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from agentactors import Agent, OpenAIProvider, tool
from agentactors.errors import ErrorKind, ProviderError, StreamInterruptedError
from agentactors.messages import LLMRequest, Message
from agentactors.testing import FakeVendor
from tests.support.fakevendor import CANARY

pytestmark = pytest.mark.anyio

CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
AUTH = {"authorization": f"Bearer {CANARY}"}


async def control(fv: FakeVendor, method: str, path: str, body: Any = None, *, raw: bytes | None = None
                  ) -> httpx.Response:
    content = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.request(method, f"{fv.control_url}{path}", content=content)


async def script(fv: FakeVendor, *items: Any, **target: str) -> None:
    response = await control(fv, "POST", "/script", {"items": list(items), **target})
    assert response.status_code == 200, response.text


def provider(fv: FakeVendor) -> OpenAIProvider:
    return OpenAIProvider("gpt-4.1", api_key=CANARY, base_url=fv.openai_base_url)


async def test_a_queued_429_reaches_the_provider_as_its_typed_rate_limit_error(fake_vendor: FakeVendor) -> None:
    await script(fake_vendor, {"error": {"status": 429, "retry_after": 2, "message": "Slow down."}}, wire="openai")
    async with provider(fake_vendor) as p:
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest([Message.user("hi")]))
        assert (await p.complete(LLMRequest([Message.user("hi")]))).content == "Echo: hi"  # the queue used up
    error = caught.value
    assert (error.status, error.kind, error.retry_after, error.retryable) == (429, ErrorKind.transient, 2.0, True)
    assert "Slow down." in str(error)


async def test_a_queued_tool_call_reaches_an_agents_tool(fake_vendor: FakeVendor) -> None:
    seen: list[str] = []

    @tool
    async def get_weather(city: str) -> dict[str, Any]:
        """Current weather for a city."""
        seen.append(city)
        return {"city": city, "sky": "clear"}

    await script(fake_vendor,
                 {"reply": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1"}]}},
                 "Clear skies in Paris.", model="gpt-4.1")
    agent = Agent(provider(fake_vendor), tools=[get_weather])
    result = await agent.run("Weather in Paris?")
    assert seen == ["Paris"]
    assert result.content == "Clear skies in Paris."
    answered = fake_vendor.requests[-1].conversation
    assert answered is not None and answered.tool_results[0].call_id == "call_1"
    assert json.loads(answered.tool_results[0].content) == {"city": "Paris", "sky": "clear"}


async def test_a_queued_stream_cut_interrupts_the_providers_stream(fake_vendor: FakeVendor) -> None:
    await script(fake_vendor, {"reply": {"text": "one two three four", "words_per_chunk": 1, "cut_after": 2}})
    async with provider(fake_vendor) as p:
        with pytest.raises(StreamInterruptedError):
            async with p.stream(LLMRequest([Message.user("hi")])) as stream:
                async for _ in stream:
                    pass
    (record,) = (await control(fake_vendor, "GET", "/requests")).json()["requests"]
    assert (record["stream"], record["outcome"]) == (True, "cut")


async def test_a_hang_is_a_reply_late_past_the_clients_timeout(fake_vendor: FakeVendor) -> None:
    await script(fake_vendor, {"reply": {"text": "late", "latency": 30}})
    async with httpx.AsyncClient(timeout=0.3) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.post(f"{fake_vendor.openai_base_url}/chat/completions", json=CHAT, headers=AUTH)
    (record,) = await fake_vendor.wait_for(lambda rs: len(rs) == 1 and rs[0].disconnected, within=10)
    assert record.outcome == "disconnected"


async def test_the_record_reads_back_without_the_key_and_without_control_calls(fake_vendor: FakeVendor) -> None:
    await script(fake_vendor, "Bonjour.", {"error": {"status": 503}})
    async with httpx.AsyncClient(timeout=60) as client:
        ok = await client.post(f"{fake_vendor.openai_base_url}/chat/completions", json=CHAT, headers=AUTH)
        stream = await client.post(f"{fake_vendor.openai_base_url}/responses", headers=AUTH,
                                   json={"model": "gpt-5-mini", "input": "hi", "stream": True})
    assert (ok.status_code, ok.json()["choices"][0]["message"]["content"]) == (200, "Bonjour.")
    assert stream.status_code == 503
    response = await control(fake_vendor, "GET", "/requests")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    records = response.json()["requests"]
    assert [(r["index"], r["wire"], r["path"], r["model"], r["body"], r["status"], r["outcome"]) for r in records] == [
        (1, "openai", "/v1/chat/completions", "gpt-4.1", CHAT, 200, "ok"),
        (2, "responses", "/v1/responses", "gpt-5-mini", {"model": "gpt-5-mini", "input": "hi", "stream": True}, 503,
         "error"),
    ]
    assert records[0]["headers"]["authorization"] == "[REDACTED]" and CANARY not in response.text
    assert records[0]["conversation"]["last_user_text"] == "hi"
    assert [r["index"] for r in (await control(fake_vendor, "GET", "/requests?since=1")).json()["requests"]] == [2]
    # The control calls are not vendor requests: not recorded, not counted.
    assert len(fake_vendor.requests) == 2
    overview = (await control(fake_vendor, "GET", "")).json()
    assert (overview["requests"], overview["pending_script"], overview["outcomes"]) == (2, 0, {"ok": 1, "error": 1})


async def test_reset_forgets_items_routes_outages_and_the_record(fake_vendor: FakeVendor) -> None:
    await script(fake_vendor, "queued")
    assert (await control(fake_vendor, "POST", "/on", {"item": "always", "wire": "anthropic"})).status_code == 200
    assert (await control(fake_vendor, "POST", "/outage", {"model": "down"})).status_code == 200
    async with httpx.AsyncClient(timeout=60) as client:
        await client.post(f"{fake_vendor.openai_base_url}/chat/completions", json=CHAT, headers=AUTH)
    assert (await control(fake_vendor, "GET", "")).json()["requests"] == 1
    response = await control(fake_vendor, "POST", "/reset")
    assert (response.status_code, response.json()) == (200, {"reset": True})
    assert (await control(fake_vendor, "GET", "/requests")).json() == {"requests": []}
    assert fake_vendor.pending_script == 0
    async with provider(fake_vendor) as p:
        assert (await p.complete(LLMRequest([Message.user("hi")]))).content == "Echo: hi"
    async with httpx.AsyncClient(timeout=60) as client:
        down = await client.post(f"{fake_vendor.openai_base_url}/chat/completions", headers=AUTH,
                                 json={**CHAT, "model": "down"})
        claude = await client.post(f"{fake_vendor.base_url}/v1/messages", json={**CHAT, "max_tokens": 10},
                                   headers={"x-api-key": CANARY, "anthropic-version": "2023-06-01"})
    assert down.status_code == 200 and claude.json()["content"][0]["text"] == "Echo: hi"


async def test_routes_outages_faults_and_settings(fake_vendor: FakeVendor) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        async def chat(model: str = "gpt-4.1") -> httpx.Response:
            return await client.post(f"{fake_vendor.openai_base_url}/chat/completions", headers=AUTH,
                                     json={**CHAT, "model": model})

        assert (await control(fake_vendor, "POST", "/on", {"item": "Always this.", "model": "m1"})).json() == {
            "routed": True}
        assert [(await chat("m1")).json()["choices"][0]["message"]["content"] for _ in range(2)] == ["Always this."] * 2
        await control(fake_vendor, "POST", "/on", {"item": None, "model": "m1"})
        assert (await chat("m1")).json()["choices"][0]["message"]["content"] == "Echo: hi"

        outage = await control(fake_vendor, "POST", "/outage", {"wire": "openai", "status": 502})
        assert outage.json() == {"outage": {"wire": "openai", "model": None, "status": 502, "duration": None}}
        assert (await chat()).status_code == 502
        assert (await control(fake_vendor, "DELETE", "/outage")).json() == {"outages": 0}
        assert (await chat()).status_code == 200

        faults = await control(fake_vendor, "POST", "/faults", {"rate": 1, "weights": {"server_error": 1}})
        assert faults.json()["faults"]["weights"] == {"server_error": 1.0}
        assert (await chat()).status_code == 500
        assert fake_vendor.requests[-1].fault == "server_error"
        assert (await control(fake_vendor, "POST", "/faults", raw=b"null")).json() == {"faults": None}
        assert fake_vendor.faults is None and (await chat()).status_code == 200

        settings = await control(fake_vendor, "POST", "/settings", {"latency": 0.01, "auto_tools": 2})
        assert settings.json() == {"settings": {"latency": 0.01, "chunk_latency": 0.0, "auto_tools": 2}}
        assert (fake_vendor.latency, fake_vendor.auto_tools) == (0.01, 2)


@pytest.mark.parametrize(("path", "body", "problem"), [
    ("/script", b"{not json", "the body is not JSON"),
    ("/script", b"", "the body must be a JSON object"),
    ("/script", b"[]", "the body must be a JSON object, not an array"),
    ("/script", b'{"items": []}', "'items' must be a non-empty array of items, not an array"),
    ("/script", b'{"item": ["x"]}', "the body: unknown field 'item'"),
    ("/script", b'{"items": [5]}', "items[0] must be a string (a text answer) or an object with one key"),
    ("/script", b'{"items": [{"text": "x"}]}', "with the keys ['text']"),
    ("/script", b'{"items": ["ok", {"error": {}}]}', "items[1].error: 'status' is required"),
    ("/script", b'{"items": [{"error": {"status": 200}}]}', "items[0].error: FakeError.status must be an HTTP error"),
    ("/script", b'{"items": [{"error": {"status": 429, "retry_after": "2"}}]}', "items[0].error: FakeError.retry_"),
    ("/script", b'{"items": [{"reply": {"txt": "x"}}]}', "items[0].reply: unknown field 'txt'"),
    ("/script", b'{"items": [{"reply": {"tool_calls": {"name": "f"}}}]}', "items[0].reply.tool_calls must be an arr"),
    ("/script", b'{"items": [{"reply": {"tool_calls": [{"arguments": {}}]}}]}', "tool_calls[0]: 'name' is required"),
    ("/script", b'{"items": [{"reply": {"cut_after": -1}}]}', "items[0].reply: cut_after must be >= 0"),
    ("/script", b'{"items": [{"reply": {"stream_error": {"status": 99}}}]}', "items[0].reply.stream_error: "),
    ("/script", b'{"items": ["x"], "wire": "openia"}', "wire / model: wire must be one of"),
    ("/script", b'{"items": ["x"], "wire": "openai", "model": "m"}', "route by wire or by model, not both"),
    ("/on", b'{"wire": "openai"}', "'item' is required"),
    ("/outage", b'{"status": 200}', "outage: an outage status must be an HTTP error status"),
    ("/faults", b"", "the body is empty"),
    ("/faults", b'{"rate": "0.5"}', "rate must be a number, not a string"),
    ("/faults", b'{"rate": 2}', "faults: FaultPlan.rate must be within [0, 1]"),
    ("/faults", b'{"rate": 0.5, "weights": {"meteor": 1}}', "faults: FaultPlan weights"),
    ("/faults", b'{"rate": 1.0, "seed": [1]}', "faults: FaultPlan.seed must be an int or None, not list"),
    ("/faults", b'{"rate": 1.0, "seed": {"a": 1}}', "faults: FaultPlan.seed must be an int or None, not dict"),
    ("/faults", b'{"rate": 1.0, "seed": true}', "faults: FaultPlan.seed must be an int or None, not bool"),
    ("/settings", b'{"latency": -1}', "latency must be a number of seconds >= 0"),
    ("/settings", b'{"auto_tools": "yes"}', "auto_tools must be a boolean or a number of calls"),
    ("/settings", b'{"latncy": 1}', "unknown field 'latncy'"),
])
async def test_a_malformed_control_body_is_a_400_naming_the_problem_and_changes_nothing(
    fake_vendor: FakeVendor, path: str, body: bytes, problem: str
) -> None:
    response = await control(fake_vendor, "POST", path, raw=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert problem in error["message"] and error["type"] == "invalid_control_request"
    overview = (await control(fake_vendor, "GET", "")).json()
    assert overview["pending_script"] == 0  # "items[1]" bad: items[0] was not queued either
    assert overview["settings"] == {"latency": 0.0, "chunk_latency": 0.0, "auto_tools": False, "faults": None}


async def test_a_bad_query_an_unknown_endpoint_and_a_wrong_method(fake_vendor: FakeVendor) -> None:
    since = await control(fake_vendor, "GET", "/requests?since=abc")
    assert since.status_code == 400 and "since must be a request index" in since.json()["error"]["message"]
    other = await control(fake_vendor, "GET", "/requests?wire=openai")
    assert other.status_code == 400 and "unknown field 'wire'" in other.json()["error"]["message"]
    missing = await control(fake_vendor, "POST", "/scripts", {"items": ["x"]})
    assert missing.status_code == 404 and "POST /_fakevendor/script" in missing.json()["error"]["message"]
    wrong = await control(fake_vendor, "GET", "/script")
    assert wrong.status_code == 405 and wrong.json()["error"]["message"] == "GET /_fakevendor/script: use POST"
    assert fake_vendor.requests == ()


async def test_no_vendor_path_reaches_the_control_api_and_it_changes_no_vendor_answer() -> None:
    async with FakeVendor(expected_api_key=CANARY) as fv, httpx.AsyncClient(timeout=60) as client:
        # Under a vendor prefix, the control path is the vendor's unknown endpoint, recorded as such.
        for path in ("/v1/_fakevendor/script", "/v1beta/_fakevendor/reset", "/_fakevendorx/script"):
            response = await client.post(f"{fv.base_url}{path}", json={"items": ["x"]}, headers=AUTH)
            assert response.status_code == 404 and "FakeVendor has no endpoint" in response.text
        assert fv.pending_script == 0 and [r.wire for r in fv.requests] == ["unknown"] * 3
        # The control API takes no vendor key (it is the test's, not the service's); the vendor still checks its.
        assert (await control(fv, "POST", "/script", {"items": ["x"]})).status_code == 200
        refused = await client.post(f"{fv.openai_base_url}/chat/completions", json=CHAT,
                                    headers={"authorization": "Bearer sk-wrong-0123456789"})
        assert refused.status_code == 401 and fv.pending_script == 1
    async with FakeVendor(control=False) as fv, httpx.AsyncClient(timeout=60) as client:
        off = await client.post(f"{fv.control_url}/script", json={"items": ["x"]}, headers=AUTH)
        assert off.status_code == 404 and "FakeVendor has no endpoint" in off.text and fv.pending_script == 0


async def test_chunk_latency_is_the_vendors_default_between_chunks() -> None:
    """``FakeVendor(chunk_latency=)`` (``--chunk-latency``) spaces every streamed answer's chunks."""
    async with FakeVendor(chunk_latency=0.1) as fv, httpx.AsyncClient(timeout=60) as client:
        fv.script("a b c d e f g h")  # four chunks of two words: three pauses
        started = time.monotonic()
        response = await client.post(f"{fv.openai_base_url}/chat/completions", headers=AUTH,
                                     json={**CHAT, "stream": True})
        assert response.status_code == 200
        assert time.monotonic() - started >= 0.29
    with pytest.raises(ValueError, match="latency must be >= 0"):
        FakeVendor(chunk_latency=-1)
