"""FakeVendor scripting: queues, routes, handlers, outages, seeded faults, the default and auto-tool answers,
strict request checks, and what is recorded (never a credential)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, assert_type

import anyio
import httpx
import pytest

from agentactors.testing._fake_default import example_arguments, example_value
from agentactors.testing.fakevendor import (
    FakeError,
    FakeReply,
    FakeToolCall,
    FakeVendor,
    FaultKind,
    FaultPlan,
    RecordedRequest,
)
from tests.support.fakevendor import CANARY, WIRES, auth_headers, body, post, time_tool, url, weather_tool

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client() -> Any:
    async with httpx.AsyncClient(timeout=10) as c:
        yield c


def _openai_text(response: httpx.Response) -> str:
    return str(response.json()["choices"][0]["message"]["content"])


# --- queues and routes --------------------------------------------------------------------------


async def test_queue_is_consumed_in_order_then_the_default_answers(
    fake_vendor: FakeVendor, client: httpx.AsyncClient
) -> None:
    fake_vendor.script("first", FakeReply(text="second"), FakeToolCall("lookup", {"q": 1}))
    assert fake_vendor.pending_script == 3
    assert _openai_text(await post(client, fake_vendor, "openai")) == "first"
    assert _openai_text(await post(client, fake_vendor, "openai")) == "second"
    calls = (await post(client, fake_vendor, "openai")).json()["choices"][0]["message"]["tool_calls"]
    assert calls[0]["function"]["name"] == "lookup"
    assert _openai_text(await post(client, fake_vendor, "openai")) == "Echo: What is the capital of France?"
    assert fake_vendor.pending_script == 0


def test_bad_script_items_are_refused_before_queueing(fake_vendor: FakeVendor) -> None:
    with pytest.raises(TypeError, match="script item"):
        fake_vendor.script("fine", 42)  # type: ignore[arg-type]
    assert fake_vendor.pending_script == 0
    with pytest.raises(ValueError, match="wire"):
        fake_vendor.script("x", wire="cohere")
    with pytest.raises(ValueError, match="not both"):
        fake_vendor.script("x", wire="openai", model="m")


async def test_model_queue_then_wire_queue_then_any(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    fake_vendor.script("any")
    fake_vendor.script("wire", wire="openai")
    fake_vendor.script("model", model="gpt-special")
    assert _openai_text(await post(client, fake_vendor, "openai", model="gpt-other")) == "wire"
    assert _openai_text(await post(client, fake_vendor, "openai", model="gpt-special")) == "model"
    assert _openai_text(await post(client, fake_vendor, "openai", model="gpt-special")) == "any"


async def test_handlers_route_by_model_and_fall_through(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    seen: list[RecordedRequest] = []

    def handler(request: RecordedRequest) -> str | None:
        seen.append(request)
        assert request.conversation is not None
        return None if "skip" in request.conversation.last_user_text else "handled"

    fake_vendor.on(FakeError(500, message="this model is down"), model="always-fails")
    fake_vendor.on(handler, wire="anthropic")
    failed = await post(client, fake_vendor, "openai", model="always-fails")
    assert failed.status_code == 500 and "down" in failed.text
    handled = await post(client, fake_vendor, "anthropic")
    assert handled.json()["content"][0]["text"] == "handled"
    fallthrough = await post(client, fake_vendor, "anthropic", payload=body("anthropic", "please skip"))
    assert fallthrough.json()["content"][0]["text"] == "Echo: please skip"
    assert [r.wire for r in seen] == ["anthropic", "anthropic"]
    fake_vendor.on(None, model="always-fails")
    assert (await post(client, fake_vendor, "openai", model="always-fails")).status_code == 200


async def test_a_broken_handler_answers_500_and_is_kept(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    def broken(request: RecordedRequest) -> str:
        raise KeyError("oops")

    fake_vendor.on(broken)
    response = await post(client, fake_vendor, "gemini")
    assert response.status_code == 500 and response.headers["x-should-retry"] == "false"
    assert isinstance(fake_vendor.handler_errors[0], KeyError)


# --- outages and faults -------------------------------------------------------------------------


async def test_outages_by_wire_model_and_duration(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    with fake_vendor.outage(wire="anthropic") as outage:
        assert (await post(client, fake_vendor, "anthropic")).status_code == 529
        assert (await post(client, fake_vendor, "openai")).status_code == 200
        active = outage.active  # a local: mypy would hold outage.active True past the block's exit
        assert active
    assert not outage.active
    assert (await post(client, fake_vendor, "anthropic")).status_code == 200
    fake_vendor.outage(model="gemini-down")
    assert (await post(client, fake_vendor, "gemini", model="gemini-down")).status_code == 503
    assert (await post(client, fake_vendor, "gemini", model="gemini-up")).status_code == 200
    fake_vendor.end_outages()
    assert (await post(client, fake_vendor, "gemini", model="gemini-down")).status_code == 200
    brief = fake_vendor.outage(duration=0.05)
    fake_vendor.script("queued")  # an outage wins over the script
    assert (await post(client, fake_vendor, "openai")).status_code == 503
    await anyio.sleep(0.08)
    assert not brief.active
    assert _openai_text(await post(client, fake_vendor, "openai")) == "queued"
    assert [r.fault for r in fake_vendor.requests].count("outage") == 3


async def _fault_sequence(plan: FaultPlan, client: httpx.AsyncClient, n: int = 30) -> list[str | None]:
    async with FakeVendor(faults=plan) as fv:
        for _ in range(n):
            try:
                await post(client, fv, "openai")
            except httpx.HTTPError:
                pass
        return [r.fault for r in fv.requests]


async def test_seeded_faults_are_reproducible(client: httpx.AsyncClient) -> None:
    plan = FaultPlan(rate=0.5, seed=11, hang=0.0,
                     weights={"rate_limit": 1, "server_error": 1, "overloaded": 1, "disconnect": 1})
    first = await _fault_sequence(plan, client)
    second = await _fault_sequence(plan, client)
    assert first == second
    assert 5 < sum(f is not None for f in first) < 25
    assert {f for f in first if f} <= {"rate_limit", "server_error", "overloaded", "disconnect"}
    # A plan's weights (a Mapping[FaultKind, float]) given back to FaultPlan as they are.
    other = await _fault_sequence(FaultPlan(rate=0.5, seed=12, hang=0.0, weights=plan.weights), client)
    assert other != first


async def test_fault_kinds(client: httpx.AsyncClient) -> None:
    async with FakeVendor(faults=FaultPlan(rate=1.0, weights={FaultKind.rate_limit: 1}, retry_after=3)) as fv:
        limited = await post(client, fv, "anthropic")
        assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
        fv.faults = FaultPlan(rate=1.0, weights={"overloaded": 1})
        assert (await post(client, fv, "anthropic")).status_code == 529
        assert (await post(client, fv, "gemini")).status_code == 503
        fv.faults = FaultPlan(rate=1.0, weights={"disconnect": 1}, cut_after=1)
        with pytest.raises(httpx.RemoteProtocolError):
            await post(client, fv, "openai", stream=True)
        fv.faults = FaultPlan(rate=1.0, weights={"timeout": 1}, hang=5.0, wires=["gemini"])
        assert (await post(client, fv, "openai")).status_code == 200  # the plan only covers gemini
        with pytest.raises(httpx.ReadTimeout):
            await client.post(url(fv, "gemini"), json=body("gemini"), headers=auth_headers("gemini"), timeout=0.1)
        hung = await fv.wait_for_disconnects(1)
        assert hung[0].fault == "timeout" and hung[0].outcome == "disconnected"
        fv.faults = None
        assert (await post(client, fv, "gemini")).status_code == 200
        assert fv.stats["faults"] == {"rate_limit": 1, "overloaded": 2, "disconnect": 1, "timeout": 1}


def test_fault_plan_weights_are_typed_as_accepted_keyed_by_kinds_names_or_both() -> None:
    # mypy --strict checks these calls (make test): a mapping is invariant in its key, so each key type is its own case.
    by_kind: dict[FaultKind, float] = {FaultKind.rate_limit: 2.0, FaultKind.timeout: 1.0}
    kinds: Mapping[FaultKind, float] = by_kind
    by_name: dict[str, float] = {"rate_limit": 2.0, "timeout": 1.0}
    names: Mapping[str, float] = by_name
    mixed: dict[FaultKind | str, float] = {FaultKind.rate_limit: 2.0, "timeout": 1.0}
    counts: dict[FaultKind, int] = {FaultKind.rate_limit: 2, FaultKind.timeout: 1}
    plans = [
        FaultPlan(weights=by_kind),
        FaultPlan(weights=kinds),
        FaultPlan(weights=by_name),
        FaultPlan(weights=names),
        FaultPlan(weights=mixed),
        FaultPlan(weights=counts),
        FaultPlan(weights={FaultKind.rate_limit: 2, "timeout": 1}),
    ]
    plans.append(FaultPlan(weights=plans[0].weights))
    for plan in plans:
        assert_type(plan.weights, Mapping[FaultKind, float])
        assert plan.weights == {FaultKind.rate_limit: 2.0, FaultKind.timeout: 1.0}


def test_fault_plan_validation() -> None:
    with pytest.raises(ValueError, match="rate"):
        FaultPlan(rate=1.5)
    with pytest.raises(ValueError, match="weights"):
        FaultPlan(rate=0.1, weights={"rate_limit": -1})
    with pytest.raises(ValueError, match="weights"):
        FaultPlan(rate=0.1, weights={"rate_limit": 0})
    with pytest.raises(ValueError, match="not a valid"):
        FaultPlan(rate=0.1, weights={"meteor": 1})
    assert FaultPlan(hang=10_000).hang == 120.0  # every delay is bounded
    with pytest.raises(ValueError, match="status"):
        FakeError(200)
    with pytest.raises(ValueError, match="stop"):
        FakeReply(stop="finished")
    with pytest.raises(ValueError, match="delay"):
        FakeReply(latency=-1)


# --- the cancelled client -----------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_a_client_that_gives_up_is_recorded_as_disconnected(
    fake_vendor: FakeVendor, client: httpx.AsyncClient, wire: str
) -> None:
    fake_vendor.script(FakeReply(text="late", latency=10), FakeReply(text="a b c d", chunk_latency=10))
    async with anyio.create_task_group() as tg:
        tg.start_soon(post, client, fake_vendor, wire)
        # Given up once the server took the first item: on a busy machine a fixed 0.1 s could end before the
        # request got there, and the stream below then took the 10-second item.
        await fake_vendor.wait_for(lambda _: fake_vendor.pending_script == 1, within=30)
        tg.cancel_scope.cancel()
    async with client.stream("POST", url(fake_vendor, wire, stream=True), json=body(wire, stream=True),
                             headers=auth_headers(wire)) as response:
        assert response.status_code == 200  # the stream has started: leave it mid-way
    gone = await fake_vendor.wait_for_disconnects(2)
    assert [r.outcome for r in gone] == ["disconnected", "disconnected"]
    assert [r.stream for r in gone] == [False, True]


async def test_a_complete_answer_is_never_counted_as_a_disconnect(
    fake_vendor: FakeVendor, client: httpx.AsyncClient
) -> None:
    for wire in WIRES:
        await post(client, fake_vendor, wire)
        await post(client, fake_vendor, wire, stream=True)
    await client.aclose()  # closing idle keep-alive connections is not a disconnect
    await anyio.sleep(0.05)
    assert fake_vendor.disconnects == ()
    assert {r.outcome for r in fake_vendor.requests} == {"ok"}


# --- default and auto-tool answers --------------------------------------------------------------


async def test_auto_tools_calls_each_tool_then_answers_with_the_results(client: httpx.AsyncClient) -> None:
    async with FakeVendor(auto_tools=True) as fv:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather and time in Paris?"}]
        tools = [{"type": "function", "function": t} for t in (weather_tool(), time_tool())]
        names = []
        for step in range(3):
            answer = (await client.post(url(fv, "openai"), headers=auth_headers("openai"),
                                        json={"model": "m", "messages": messages, "tools": tools})).json()
            message = answer["choices"][0]["message"]
            if not message.get("tool_calls"):
                break
            call = message["tool_calls"][0]
            names.append(call["function"]["name"])
            if step == 0:
                assert json.loads(call["function"]["arguments"]) == {"city": "Paris", "days": 2}
            messages += [message, {"role": "tool", "tool_call_id": call["id"], "content": f"result {step}"}]
        assert names == ["get_weather", "get_time"]
        assert "get_weather: result 0" in message["content"] and "get_time: result 1" in message["content"]
        assert "Weather and time in Paris?" in message["content"]


async def test_auto_tools_honours_tool_choice_and_budget(client: httpx.AsyncClient) -> None:
    async with FakeVendor(auto_tools=1) as fv:
        tools = [{"type": "function", "function": t} for t in (weather_tool(), time_tool())]
        forced = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools,
                  "tool_choice": {"type": "function", "function": {"name": "get_time"}}}
        answer = (await client.post(url(fv, "openai"), headers=auth_headers("openai"), json=forced)).json()
        assert answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_time"
        none = {**forced, "tool_choice": "none"}
        answer = (await client.post(url(fv, "openai"), headers=auth_headers("openai"), json=none)).json()
        assert answer["choices"][0]["message"]["content"] == "Echo: hi"


@pytest.mark.parametrize("choice", [{"type": "function", "function": {"name": "get_time"}}, "required"])
async def test_a_forced_tool_choice_is_honoured_without_auto_tools(client: httpx.AsyncClient, choice: Any) -> None:
    """A vendor never answers a forced choice with text; the fake answered it with its echo unless auto_tools was
    on, so a test of a forced call (a typed result's output tool, a tool_choice setting) saw what no vendor sends."""
    async with FakeVendor() as fv:
        tools = [{"type": "function", "function": t} for t in (weather_tool(), time_tool())]
        forced = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools, "tool_choice": choice}
        answer = (await client.post(url(fv, "openai"), headers=auth_headers("openai"), json=forced)).json()
        called = answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
        assert called == ("get_time" if isinstance(choice, dict) else "get_weather")
        offered = {**forced, "tool_choice": "auto"}  # merely offered: answered with text, as before
        answer = (await client.post(url(fv, "openai"), headers=auth_headers("openai"), json=offered)).json()
        assert answer["choices"][0]["message"]["content"] == "Echo: hi"


async def test_default_answer_respects_max_tokens(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    payload = body("anthropic", "word " * 100)
    payload["max_tokens"] = 5
    answer = (await post(client, fake_vendor, "anthropic", payload=payload)).json()
    assert answer["stop_reason"] == "max_tokens" and len(answer["content"][0]["text"]) == 20


def test_example_values_follow_the_schema() -> None:
    assert example_value({"type": "string", "enum": ["b", "a"]}) == "b"
    assert example_value({"const": 7}) == 7
    assert example_value({"type": ["integer", "null"], "minimum": 3}) == 3
    assert example_value({"type": "integer", "exclusiveMinimum": 3}) == 4
    assert example_value({"type": "number", "maximum": -2}) == -2.0
    assert example_value({"type": "string", "format": "date"}) == "2024-01-01"
    assert example_value({"type": "string", "minLength": 10}) == "examplexxx"
    assert example_value({"type": "array", "items": {"type": "boolean"}, "minItems": 2}) == [True, True]
    assert example_value({"anyOf": [{"type": "null"}, {"type": "integer"}]}) == 1
    assert example_value({"type": "STRING"}) == "example"  # Gemini's legacy uppercase types
    schema = {
        "type": "object",
        "$defs": {"Unit": {"type": "string", "enum": ["C", "F"]}},
        "properties": {"unit": {"$ref": "#/$defs/Unit"}, "note": {"type": "string"}, "n": {"default": 4}},
        "required": ["unit", "n"],
    }
    assert example_arguments(schema) == {"unit": "C", "n": 4}
    assert example_arguments({"type": "object", "properties": {"a": {"type": "boolean"}}}) == {"a": True}
    deep: dict[str, Any] = {"type": "object", "properties": {}}
    deep["properties"]["self"] = {"$ref": "#"}
    deep["required"] = ["self"]
    assert isinstance(example_arguments(deep), dict)  # recursion is bounded


# --- strict checks ------------------------------------------------------------------------------


async def test_strict_rejections_match_the_vendors(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    orphan = {"model": "m", "messages": [{"role": "user", "content": "hi"},
                                         {"role": "tool", "tool_call_id": "call_1", "content": "x"}]}
    response = await post(client, fake_vendor, "openai", payload=orphan)
    assert response.status_code == 400 and "preceeding message with 'tool_calls'" in response.json()["error"]["message"]
    unanswered = {"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "user", "content": "and?"}]}
    assert "did not have response messages: c1" in (await post(client, fake_vendor, "openai",
                                                                payload=unanswered)).text
    no_version = await post(client, fake_vendor, "anthropic", headers={"x-api-key": CANARY})
    assert no_version.status_code == 400 and no_version.json()["error"]["message"] == (
        "anthropic-version: header is required")
    no_max = body("anthropic")
    del no_max["max_tokens"]
    assert (await post(client, fake_vendor, "anthropic", payload=no_max)).status_code == 400
    stray = body("anthropic")
    stray["messages"].append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_x", "content": "r"}]})
    assert "unexpected `tool_use_id`" in (await post(client, fake_vendor, "anthropic", payload=stray)).text
    legacy = body("gemini")
    legacy["tools"] = [{"functionDeclarations": [{"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}}]}]
    rejected = await post(client, fake_vendor, "gemini", payload=legacy)
    assert rejected.status_code == 400
    assert 'Unknown name "additionalProperties"' in rejected.json()["error"]["message"]
    assert rejected.json()["error"]["status"] == "INVALID_ARGUMENT"
    nullable = body("gemini")
    nullable["tools"] = [{"functionDeclarations": [{"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": ["string", "null"]}}}}]}]
    assert (await post(client, fake_vendor, "gemini", payload=nullable)).status_code == 400
    not_json = await client.post(url(fake_vendor, "openai"), content=b"{oops", headers=auth_headers("openai"))
    assert not_json.status_code == 400 and not_json.json()["error"]["type"] == "invalid_request_error"
    assert all(r.outcome == "error" for r in fake_vendor.requests)


async def test_lenient_mode_accepts_what_strict_rejects(client: httpx.AsyncClient) -> None:
    async with FakeVendor(strict=False) as fv:
        response = await post(client, fv, "anthropic", headers={})
        assert response.status_code == 200
        assert fv.requests[0].api_key_present is False


async def test_keys_are_checked_and_never_echoed(client: httpx.AsyncClient) -> None:
    async with FakeVendor(expected_api_key=CANARY) as fv:
        assert (await post(client, fv, "openai")).status_code == 200
        wrong = await post(client, fv, "openai", headers=auth_headers("openai", "sk-wrong-key-123456789"))
        assert wrong.status_code == 401 and "sk-wrong" not in wrong.text
        missing = await post(client, fv, "gemini", headers={})
        assert missing.status_code == 401 and missing.json()["error"]["status"] == "UNAUTHENTICATED"


# --- the record ---------------------------------------------------------------------------------


async def test_credentials_are_never_recorded(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    for wire in WIRES:
        await post(client, fake_vendor, wire)
    await client.post(url(fake_vendor, "gemini") + f"?key={CANARY}", json=body("gemini"))
    leaky = body("openai", f"my key is {CANARY}")
    await post(client, fake_vendor, "openai", payload=leaky,
               headers={**auth_headers("openai"), "x-debug": f"key={CANARY}"})
    records = fake_vendor.requests
    assert CANARY not in repr(records) and CANARY not in str(fake_vendor.stats)
    assert all(r.api_key_present for r in records)
    assert [r.key_leaks for r in records] == [(), (), (), ("url",), ("body", "header:x-debug")]
    assert records[3].path.endswith("?key=[REDACTED]")
    assert records[4].body["messages"][0]["content"] == "my key is [REDACTED]"
    assert records[4].headers["x-debug"] == "key=[REDACTED]"


async def test_unknown_endpoints_are_recorded_404s(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    response = await client.post(f"{fake_vendor.base_url}/v1/completions", json={"prompt": "x"})
    assert response.status_code == 404 and "no endpoint" in response.text
    assert fake_vendor.requests[0].wire == "unknown"


async def test_records_can_be_bounded_and_cleared(client: httpx.AsyncClient) -> None:
    async with FakeVendor(max_records=2, record_bodies=False) as fv:
        fv.script("a")
        for _ in range(3):
            await post(client, fv, "openai")
        assert [r.index for r in fv.requests] == [2, 3]
        assert fv.requests[0].body is None and fv.requests[0].conversation is not None
        fv.script("queued")
        fv.on("routed")
        fv.clear()
        assert fv.requests == () and fv.pending_script == 0
        assert _openai_text(await post(client, fv, "openai")).startswith("Echo:")


async def test_a_short_key_never_mangles_the_request(fake_vendor: FakeVendor, client: httpx.AsyncClient) -> None:
    # Redaction is for the record only; a one-letter "key" must not rewrite "max_tokens" or "keep-alive".
    response = await post(client, fake_vendor, "anthropic", headers=auth_headers("anthropic", "k"))
    assert response.status_code == 200
    (record,) = fake_vendor.requests
    assert record.body["max_tokens"] == 256 and record.headers["x-api-key"] == "[REDACTED]"
    assert record.key_leaks == () and "keep-alive" in record.headers.get("connection", "keep-alive")
