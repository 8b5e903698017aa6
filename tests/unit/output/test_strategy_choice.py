"""Auto's choice against what the provider would refuse before sending: a degraded step the skipped members
can carry, a schema the wire's constrained decoding cannot compile, settings that rule out a forced choice
(Anthropic's thinking), Gemini's response format beside tools; and an explicit ToolOutput on the JSON-fallback
transport ending in the result.  No sockets (vendor providers answer through httpx's MockTransport): both
backends, virtual time."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, Literal

import httpx
import pytest

from agentactors import (
    Agent,
    AnthropicProvider,
    GeminiProvider,
    InMemoryRecorder,
    ModelSettings,
    NativeOutput,
    OpenAIProvider,
    ProviderError,
    ScriptedProvider,
    ToolCall,
    ToolOutput,
    UnsupportedToolChoiceError,
    tool,
    with_fallback,
    with_pool,
    with_retry,
)
from agentactors.messages import ResponseFormat
from agentactors.providers.port import forced_tool_choice_refusal, response_format_refusal

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

Pick = Literal["refund", "replace", "escalate"]


@dataclasses.dataclass
class Person:
    name: str
    age: int


def trail(recorder: InMemoryRecorder) -> list[str]:
    return [e.type for e in recorder.events if e.type.startswith(("output.", "fallback."))]


def events(recorder: InMemoryRecorder, kind: str) -> list[Any]:
    return [e for e in recorder.events if e.type == kind]


def mock_client(answer: Callable[[dict[str, Any]], dict[str, Any]], bodies: list[dict[str, Any]]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        return httpx.Response(200, json=answer(body))

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def openai_text(text: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: {
        "id": "c1", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def anthropic_text(text: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: {
        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }


def gemini_text(text: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
    }


class StrictScripted(ScriptedProvider):
    """A scripted provider whose constrained decoding refuses open mappings, as OpenAI's strict mode does."""

    def response_format_refusal(self, fmt: ResponseFormat, model: str | None, *, tools: bool = False) -> str | None:
        text = json.dumps(fmt.schema)
        return "response is an open mapping" if '"additionalProperties": {' in text else None


# --- 1. a degraded step goes native only where the skipped members carry it ------------------------------------


async def test_a_degraded_step_is_prompted_when_the_skipped_member_cannot_carry_a_response_format() -> None:
    down = ProviderError("overloaded", provider="a", kind="transient", status=503)
    primary = ScriptedProvider([down, down], name="a")
    second = ScriptedProvider(['"replace"'], name="b", rejects_forced_tool_choice={"scripted-model"},
                              carries_response_format=False)
    recorder = InMemoryRecorder()
    chain = with_fallback(primary, second, skip_incapable=True)
    result = await Agent(chain, output_type=Pick, recorders=[recorder]).run("what now?")  # type: ignore[arg-type]
    assert result.ok and result.output == "replace"
    # b is reached once, with neither a forced choice nor a response format: the prompted instruction instead.
    assert [(r.tool_choice.forced, r.response_format) for r in second.requests] == [(False, None)]
    assert '"enum":["refund","replace","escalate"]' in second.requests[0].messages[0].content
    assert trail(recorder) == ["output.strategy", "fallback.skipped", "fallback.exhausted",
                               "output.strategy_degraded", "fallback.moved"]
    (degraded,) = events(recorder, "output.strategy_degraded")
    assert (degraded.from_strategy, degraded.strategy) == ("tool", "prompted")
    assert "'b'" in degraded.reason and "cannot carry a JSON-schema response format" in degraded.reason


async def test_a_degraded_step_goes_native_when_every_skipped_member_carries_it_behind_a_decorator() -> None:
    down = ProviderError("overloaded", provider="a", kind="transient", status=503)
    primary = ScriptedProvider([down, down], name="a", carries_response_format=False)
    second = ScriptedProvider(['{"response": "refund"}'], name="b", rejects_forced_tool_choice={"scripted-model"})
    recorder = InMemoryRecorder()
    chain = with_retry(with_fallback(primary, second, skip_incapable=True), max_attempts=1)
    result = await Agent(chain, output_type=Pick, recorders=[recorder]).run("what now?")  # type: ignore[arg-type]
    assert result.output == "refund"
    assert second.requests[0].response_format is not None and not second.requests[0].tool_choice.forced
    (degraded,) = events(recorder, "output.strategy_degraded")
    assert degraded.strategy == "native"


def test_a_chain_answers_for_the_members_it_names_and_decorators_pass_the_names_on() -> None:
    fmt = ResponseFormat("x", {"type": "object", "properties": {}, "additionalProperties": False})
    a = ScriptedProvider([], name="a")
    b = ScriptedProvider([], name="b", carries_response_format=False)
    chain = with_fallback(a, b, skip_incapable=True)
    assert response_format_refusal(chain, None, fmt) is None  # b is skipped, a carries it
    assert response_format_refusal(chain, None, fmt, members=["a"]) is None
    reason = response_format_refusal(with_retry(chain), None, fmt, members=["b"])
    assert reason is not None and "'b'" in reason
    # A default chain asks every member, and so does a pool (any member may serve any call).
    assert response_format_refusal(with_fallback(a, b), None, fmt) is not None
    open_mapping = ResponseFormat("m", {"type": "object", "properties": {"r": {"type": "object",
                                        "additionalProperties": {"type": "integer"}}}})
    strict = StrictScripted([], name="strict")
    assert response_format_refusal(with_pool(a, a), None, open_mapping) is None
    pooled = response_format_refusal(with_pool(a, strict), None, open_mapping)
    assert pooled is not None and "'strict'" in pooled and "open mapping" in pooled


# --- 2. a schema the wire cannot carry is not picked as native --------------------------------------------------


async def test_auto_does_not_pick_native_for_a_schema_openai_strict_mode_cannot_carry() -> None:
    bodies: list[dict[str, Any]] = []
    recorder = InMemoryRecorder()
    async with OpenAIProvider("gpt-4o", api_key="k", carries_forced_tool_choice=False,
                              http_client=mock_client(openai_text('{"response": {"a": 1}}'), bodies)) as provider:
        result = await Agent(provider, output_type=dict[str, int], recorders=[recorder]).run("scores?")
    assert result.error is None and result.output == {"a": 1}
    (body,) = bodies
    assert "response_format" not in body and "tools" not in body
    (chosen,) = events(recorder, "output.strategy")
    assert chosen.strategy == "prompted" and "open mapping" in chosen.reason


async def test_auto_does_not_pick_native_for_a_schema_anthropic_cannot_carry() -> None:
    bodies: list[dict[str, Any]] = []
    recorder = InMemoryRecorder()
    # An always-thinking alias rejects forced choices, so auto looks at the response format next.
    async with AnthropicProvider("claude-sonnet-4-5-thinking", api_key="k",
                                 http_client=mock_client(anthropic_text('{"response": {"a": 1}}'), bodies)) as provider:
        result = await Agent(provider, output_type=dict[str, int], recorders=[recorder]).run("scores?")
    assert result.error is None and result.output == {"a": 1}
    assert "output_config" not in bodies[0]
    assert [e.strategy for e in events(recorder, "output.strategy")] == ["prompted"]


async def test_a_degraded_step_is_prompted_when_the_schema_does_not_fit_the_skipped_member() -> None:
    down = ProviderError("overloaded", provider="a", kind="transient", status=503)
    primary = ScriptedProvider([down, down], name="a")
    second = StrictScripted(['{"response": {"a": 1}}'], name="b", rejects_forced_tool_choice={"scripted-model"})
    recorder = InMemoryRecorder()
    chain = with_fallback(primary, second, skip_incapable=True)
    result = await Agent(chain, output_type=dict[str, int], recorders=[recorder]).run("scores?")
    assert result.output == {"a": 1}
    assert second.requests[0].response_format is None
    (degraded,) = events(recorder, "output.strategy_degraded")
    assert degraded.strategy == "prompted" and "open mapping" in degraded.reason


# --- 3. settings that rule out a forced choice ------------------------------------------------------------------

THINKING = ModelSettings(thinking_budget=2048, max_tokens=8000)


@pytest.mark.parametrize("where", ["agent", "run", "provider"])
async def test_anthropic_thinking_makes_auto_pick_native_up_front_without_a_refused_request(where: str) -> None:
    bodies: list[dict[str, Any]] = []
    recorder = InMemoryRecorder()
    client = mock_client(anthropic_text('{"name": "Ada", "age": 36}'), bodies)
    async with AnthropicProvider("claude-sonnet-4-5", api_key="k", http_client=client,
                                 settings=THINKING if where == "provider" else None) as provider:
        agent = Agent(provider, output_type=Person, recorders=[recorder],
                      settings=THINKING if where == "agent" else None)
        result = await agent.run("who?", settings=THINKING if where == "run" else None)
    assert result.error is None and result.output == Person("Ada", 36)
    (chosen,) = events(recorder, "output.strategy")
    assert chosen.strategy == "native"
    assert "thinking_budget=2048" in chosen.reason and "forced tool choice" in chosen.reason
    assert events(recorder, "output.strategy_degraded") == []
    assert len(events(recorder, "llm.request")) == 1  # no request built only to be refused
    (body,) = bodies
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["output_config"]["format"]["type"] == "json_schema" and "tool_choice" not in body


def test_the_settings_refusal_is_the_codecs_own_reading_and_passes_through_composites() -> None:
    claude = AnthropicProvider("claude-sonnet-4-5", api_key="k")
    assert forced_tool_choice_refusal(claude, None, None) is None
    assert forced_tool_choice_refusal(claude, None, ModelSettings(temperature=0.5)) is None
    assert forced_tool_choice_refusal(claude, None, THINKING) is not None
    assert forced_tool_choice_refusal(claude, "claude-sonnet-4-6", ModelSettings(reasoning_effort="high")) is not None
    via_options = ModelSettings(extra={"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 1024}}})
    assert forced_tool_choice_refusal(claude, None, via_options) is not None
    # A chain asks each member for the model it would call; a decorator asks its inner provider.
    chain = with_retry(with_fallback(ScriptedProvider([], name="s"), claude))
    reason = forced_tool_choice_refusal(chain, None, THINKING)
    assert reason is not None and "'anthropic'" in reason
    assert forced_tool_choice_refusal(with_pool(ScriptedProvider([]), claude), None, THINKING) is not None
    assert forced_tool_choice_refusal(ScriptedProvider([]), None, THINKING) is None  # the default: nothing
    from agentactors.output.choice import CallShape, auto_strategy

    shape = CallShape(chain, None, native_tools=True, has_tools=False, settings=THINKING,
                      fmt=ResponseFormat("p", {"type": "object", "properties": {}, "additionalProperties": False}))
    assert auto_strategy(shape)[0] == "native"


# --- 4. Gemini before 3: a response format beside tools ---------------------------------------------------------


@tool
async def lookup(name: str) -> str:
    """Look a person up."""
    return f"{name} is 36"


async def test_gemini_before_3_refuses_native_output_beside_tools_before_sending() -> None:
    bodies: list[dict[str, Any]] = []
    async with GeminiProvider("gemini-2.5-flash", api_key="k",
                              http_client=mock_client(gemini_text("{}"), bodies)) as provider:
        result = await Agent(provider, tools=[lookup], output_type=NativeOutput(Person)).run("who?")
    assert isinstance(result.error, ProviderError) and result.error.kind.value == "request"
    assert "gemini-2.5-flash" in str(result.error) and result.generation_failed
    assert bodies == []  # nothing was sent


async def test_gemini_3_takes_native_output_beside_tools() -> None:
    bodies: list[dict[str, Any]] = []
    async with GeminiProvider("gemini-3-pro-preview", api_key="k",
                              http_client=mock_client(gemini_text('{"name": "Ada", "age": 36}'), bodies)) as provider:
        result = await Agent(provider, tools=[lookup], output_type=NativeOutput(Person)).run("who?")
    assert result.output == Person("Ada", 36)
    assert bodies[0]["generationConfig"]["responseMimeType"] == "application/json" and bodies[0]["tools"]


async def test_auto_on_gemini_before_3_with_tools_does_not_pick_native() -> None:
    bodies: list[dict[str, Any]] = []
    recorder = InMemoryRecorder()
    async with GeminiProvider("gemini-2.5-flash", api_key="k", rejects_forced_tool_choice=["gemini-2.5"],
                              http_client=mock_client(gemini_text('{"name": "Ada", "age": 36}'), bodies)) as provider:
        agent = Agent(provider, tools=[lookup], output_type=Person, recorders=[recorder])
        result = await agent.run("who?")
        assert result.output == Person("Ada", 36)
        assert "responseMimeType" not in bodies[0].get("generationConfig", {})
        # Without tools the same model takes the response format.
        assert (await Agent(provider, output_type=Person).run("who?")).output == Person("Ada", 36)
    assert bodies[1]["generationConfig"]["responseMimeType"] == "application/json"
    (chosen,) = events(recorder, "output.strategy")
    assert chosen.strategy == "prompted" and "function calling" in chosen.reason


# --- 5. an explicit ToolOutput on the JSON-fallback transport ends in the result ---------------------------------


async def test_tool_output_on_the_json_fallback_transport_fails_the_run_without_raising() -> None:
    provider = ScriptedProvider(["unused"], carries_tools=False)
    result = await Agent(provider, output_type=ToolOutput(Person)).run("who?")
    assert isinstance(result.error, UnsupportedToolChoiceError)
    assert result.generation_failed and not result.ok
    assert [result.output] == [None]
    assert provider.requests == []  # nothing was sent


async def test_tool_output_on_the_json_fallback_transport_fails_a_stream_without_raising() -> None:
    provider = ScriptedProvider(["unused"], carries_tools=False)
    recorder = InMemoryRecorder()
    agent = Agent(provider, output_type=ToolOutput(Person), recorders=[recorder])
    async with agent.stream("who?") as run:
        result = await run.wait()
    assert isinstance(result.error, UnsupportedToolChoiceError) and result.generation_failed
    assert provider.requests == [] and events(recorder, "llm.request") == []
    (finished,) = events(recorder, "run.finished")
    assert finished.generation_failed


# --- 6. integral floats become ints, in answers and in tool arguments ---------------------------------------------


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (int, {"response": 2.0}, 2),
        (Person, {"name": "Ada", "age": 36.0}, Person("Ada", 36)),
        (Literal[1, 2], {"response": 1.0}, 1),
        (list[int], {"response": [1.0, 2]}, [1, 2]),
        (int | None, {"response": 3.0}, 3),
    ],
)
async def test_an_integral_float_answer_becomes_an_int(output_type: Any, arguments: dict[str, Any],
                                                       expected: Any) -> None:
    provider = ScriptedProvider([ToolCall("c1", "final_result", arguments)])
    result = await Agent(provider, output_type=output_type).run("n")
    assert result.output == expected
    assert repr(result.output) == repr(expected)  # 2, not 2.0


async def test_an_integral_float_tool_argument_becomes_an_int_and_a_literal_its_member() -> None:
    seen: list[Any] = []

    @tool
    async def pick(n: int, level: Literal[1, 2], scores: dict[str, int]) -> str:
        """Pick."""
        seen.extend([n, level, scores])
        return "ok"

    provider = ScriptedProvider(
        [ToolCall("c1", "pick", {"n": 2.0, "level": 1.0, "scores": {"a": 3.0}}), "done"]
    )
    result = await Agent(provider, tools=[pick]).run("go")
    assert result.content == "done"
    assert repr(seen) == "[2, 1, {'a': 3}]"
