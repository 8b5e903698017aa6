"""The Chat Completions fields that ask for a kind of answer — ``response_format``, ``tools`` / ``tool_choice``,
``max_tokens`` — through the app's ASGI interface: each is honoured, or refused with a 400 naming it before any
model call; never taken and dropped, so a client never reads free text where it asked for JSON.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from agentactors import Agent, Capabilities, ScriptedProvider, ToolCall, tool
from agentactors.serve import openai_app
from tests.unit.serve.test_hostile_requests import USER, assert_openai_error, request

pytestmark = pytest.mark.anyio

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "people": {"type": "integer", "minimum": 0}},
    "required": ["city", "people"],
    "additionalProperties": False,
}


def json_schema(schema: Any = CITY, **extra: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "city", "schema": schema, "strict": True, **extra}}


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "a", "messages": [USER], **fields}


# --- response_format: honoured ------------------------------------------------------------------------------------


async def test_a_json_schema_answer_is_validated_json_of_that_schema() -> None:
    # The scripted model takes a forced tool choice, so auto asks for the answer as the output tool's call: the
    # text of the run is empty, and the client still reads the JSON it asked for.
    provider = ScriptedProvider([ToolCall("c1", "final_result", {"city": "Oslo", "people": 709_000})])
    app = openai_app({"a": Agent(provider, name="a")})
    answer = await request(app, body(response_format=json_schema()))
    assert answer.status == 200, answer.body[:300]
    message = answer.json()["choices"][0]["message"]
    assert json.loads(message["content"]) == {"city": "Oslo", "people": 709_000}
    sent = provider.requests[0]
    assert [spec.parameters for spec in sent.tools] == [CITY], "the model was asked for the client's schema"


async def test_a_json_schema_goes_to_a_model_as_its_response_format_and_a_wrong_answer_is_asked_again() -> None:
    native = Capabilities(forced_tool_choice=False, response_format=True)
    for stream in (False, True):
        provider = ScriptedProvider(
            ['{"city": "Oslo", "people": -1}', '{"city": "Oslo", "people": 3}'], capabilities=native
        )
        app = openai_app({"a": Agent(provider, name="a")})
        answer = await request(app, body(response_format=json_schema(), stream=stream))
        assert answer.status == 200, answer.body[:300]
        if stream:
            events = answer.events()
            text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
            assert events[-1]["choices"][0]["finish_reason"] == "stop"
        else:
            text = answer.json()["choices"][0]["message"]["content"]
        assert json.loads(text) == {"city": "Oslo", "people": 3}, "only the valid answer reaches the client"
        assert provider.requests[0].response_format is not None
        assert provider.requests[0].response_format.schema == CITY
        assert provider.requests[0].response_format.name == "city"
        assert len(provider.requests) == 2, "the refused answer was asked again"


async def test_json_object_answers_a_json_object() -> None:
    provider = ScriptedProvider(['Sure! {"ok": true, "n": [1, 2]}'], capabilities=Capabilities())
    app = openai_app({"a": Agent(provider, name="a")})
    answer = await request(app, body(response_format={"type": "json_object"}))
    assert answer.status == 200, answer.body[:300]
    assert json.loads(answer.json()["choices"][0]["message"]["content"]) == {"ok": True, "n": [1, 2]}


async def test_text_is_the_plain_answer() -> None:
    provider = ScriptedProvider(["free text"])
    app = openai_app({"a": Agent(provider, name="a")})
    answer = await request(app, body(response_format={"type": "text"}))
    assert answer.json()["choices"][0]["message"]["content"] == "free text"
    assert provider.requests[0].response_format is None and provider.requests[0].tools == ()


async def test_an_answer_that_never_fits_the_schema_is_a_502_not_a_200() -> None:
    for stream in (False, True):
        provider = ScriptedProvider(['{"city": 1}'] * 3, capabilities=Capabilities(response_format=True))
        app = openai_app({"a": Agent(provider, name="a", output_retries=2)})
        answer = await request(app, body(response_format=json_schema(), stream=stream))
        if answer.status == 200:  # the stream began with the first answer: it ends with an error event
            assert stream and answer.events()[-1]["error"]["code"] == "response_format_unmet"
            assert b"[DONE]" not in answer.body
        else:
            assert assert_openai_error(answer, 502)["code"] == "response_format_unmet"


@dataclasses.dataclass
class Pick:
    label: str


async def test_a_typed_agent_answers_its_output_as_json_text() -> None:
    # Under the tool strategy a typed run's text is empty: the completion carries its output, not "".
    provider = ScriptedProvider([ToolCall("c1", "final_result", {"label": "spam"})])
    app = openai_app({"a": Agent(provider, name="a", output_type=Pick)})
    answer = await request(app, body())
    assert json.loads(answer.json()["choices"][0]["message"]["content"]) == {"label": "spam"}


# --- response_format: refused ---------------------------------------------------------------------------------------


async def test_a_response_format_the_agent_cannot_honour_is_a_400() -> None:
    provider = ScriptedProvider(["never"])
    other = Agent(provider, name="other")
    cannot: dict[str, Agent[Any]] = {
        "typed": Agent(provider, name="typed", output_type=Pick),
        "validated": Agent(provider, name="validated", output_validator=lambda text: text),
        "hands_off": Agent(provider, name="hands_off", handoffs=[other]),
    }
    app = openai_app(cannot)
    for name in cannot:
        for fmt in (json_schema(), {"type": "json_object"}):
            error = assert_openai_error(
                await request(app, {**body(response_format=fmt), "model": name}), 400, param="response_format"
            )
            assert error["type"] == "invalid_request_error" and error["code"] == "unsupported_response_format"
    assert provider.calls == 0


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _ref_bomb(levels: int, width: int) -> dict[str, Any]:
    """A few kilobytes of ``$defs``, each referring ``width`` times to the next: ``width ** levels`` values inlined."""
    defs: dict[str, Any] = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * width} for i in range(levels)}
    defs[f"d{levels}"] = {"type": "string"}
    return {"type": "object", "properties": {"a": {"$ref": "#/$defs/d0"}}, "$defs": defs}


BAD_FORMATS: list[tuple[Any, str]] = [
    ("json", "response_format"),
    ({"type": "xml"}, "response_format.type"),
    ({}, "response_format.type"),
    ({"type": "json_schema"}, "response_format.json_schema"),
    ({"type": "json_schema", "json_schema": "x"}, "response_format.json_schema"),
    ({"type": "json_schema", "json_schema": {"name": "city"}}, "response_format.json_schema.schema"),
    (json_schema([]), "response_format.json_schema.schema"),
    (json_schema("object"), "response_format.json_schema.schema"),
    (json_schema(CITY, name=""), "response_format.json_schema.name"),
    (json_schema(CITY, name="no spaces allowed"), "response_format.json_schema.name"),
    (json_schema(CITY, name=None), "response_format.json_schema.name"),
    (json_schema(CITY, strict="yes"), "response_format.json_schema.strict"),
    (json_schema(CITY, description=5), "response_format.json_schema.description"),
    (json_schema({"type": 5}), "response_format.json_schema.schema"),  # no JSON Schema
    (json_schema({"type": "string", "pattern": "(unclosed"}), "response_format.json_schema.schema"),  # no regex
    (json_schema({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}), "response_format.json_schema.schema"),
    (json_schema({"$ref": "https://example.com/s.json"}), "response_format.json_schema.schema"),
    (json_schema(_deep(60)), "response_format.json_schema.schema"),
    (
        json_schema({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(6000)}}),
        "response_format.json_schema.schema",
    ),  # 170,000 characters
    (json_schema({"enum": [0] * 25_000}), "response_format.json_schema.schema"),  # 25,000 values
    (json_schema(_ref_bomb(4, 64)), "response_format.json_schema.schema"),  # 64**4 values once inlined
]


@pytest.mark.parametrize(("fmt", "param"), BAD_FORMATS)
async def test_a_response_format_of_the_wrong_shape_is_a_400_naming_it(fmt: Any, param: str) -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    for stream in (False, True):
        error = assert_openai_error(await request(app, body(response_format=fmt, stream=stream)), 400, param=param)
        assert error["type"] == "invalid_request_error"
    assert provider.calls == 0


async def test_a_json_schema_turn_of_a_session_is_held_to_the_schema_too() -> None:
    from agentactors import Runtime

    provider = ScriptedProvider([ToolCall("c1", "final_result", {"city": "Oslo", "people": 3}), "plain"])
    async with Runtime() as rt:
        app = openai_app({"a": Agent(provider, name="a")}, runtime=rt, sessions=True)
        headers = [(b"x-session-id", b"s-1")]
        first = await request(app, body(response_format=json_schema()), headers=headers)
        assert json.loads(first.json()["choices"][0]["message"]["content"]) == {"city": "Oslo", "people": 3}
        second = await request(app, body(), headers=headers)
        assert second.json()["choices"][0]["message"]["content"] == "plain"
    assert provider.requests[1].tools == (), "the next turn, without a format, asks for no output tool"


# --- tools and tool_choice ----------------------------------------------------------------------------------------

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {"name": "weather", "parameters": {"type": "object", "properties": {}}},
}


async def test_a_request_that_requires_a_client_tool_is_a_400() -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    required: list[dict[str, Any]] = [
        {"tools": [WEATHER], "tool_choice": "required"},
        {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "weather"}}},
        {
            "tools": [WEATHER],
            "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [WEATHER]}},
        },
        {"functions": [WEATHER["function"]], "function_call": {"name": "weather"}},
    ]
    for fields in required:
        param = "function_call" if "function_call" in fields else "tool_choice"
        error = assert_openai_error(await request(app, body(**fields)), 400, param=param)
        assert error["code"] == "unsupported_tool_choice" and "server" in error["message"]
    wrong: list[tuple[dict[str, Any], str]] = [
        ({"tools": {}}, "tools"),
        ({"tools": [5]}, "tools"),
        ({"tool_choice": 5}, "tool_choice"),
        ({"tool_choice": "sometimes"}, "tool_choice"),
        ({"functions": "x"}, "functions"),
        ({"function_call": 5}, "function_call"),
    ]
    for fields, param in wrong:
        assert_openai_error(await request(app, body(**fields)), 400, param=param)
    assert provider.calls == 0


async def test_a_tool_choice_of_the_wrong_shape_is_a_400_naming_it_never_a_500() -> None:
    # Each was read with .get before its type was known: an AttributeError out of the app, a 500 with a traceback.
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    allowed = "tool_choice.allowed_tools"
    wrong: list[tuple[Any, str, str]] = [
        ({"type": "allowed_tools", "allowed_tools": "x"}, allowed, "invalid_type"),
        ({"type": "allowed_tools", "allowed_tools": ["a"]}, allowed, "invalid_type"),
        ({"type": "allowed_tools", "allowed_tools": []}, allowed, "invalid_type"),
        ({"type": "allowed_tools", "allowed_tools": 5}, allowed, "invalid_type"),
        ({"type": "allowed_tools"}, allowed, "missing_required_parameter"),
        ({"type": "allowed_tools", "allowed_tools": {"mode": []}}, f"{allowed}.mode", "invalid_type"),
        ({"type": "allowed_tools", "allowed_tools": {"mode": {"a": 1}}}, f"{allowed}.mode", "invalid_type"),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "sometimes"}}, f"{allowed}.mode", "invalid_value"),
        ({"type": "allowed_tools", "allowed_tools": {"tools": []}}, f"{allowed}.mode", "missing_required_parameter"),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": "x"}}, f"{allowed}.tools",
         "invalid_type"),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [5]}}, f"{allowed}.tools",
         "invalid_type"),
        ({"type": ["allowed_tools"]}, "tool_choice.type", "invalid_type"),
        ({"type": "sometimes"}, "tool_choice.type", "invalid_value"),
        ({}, "tool_choice.type", "missing_required_parameter"),
        ({"type": "function", "function": ["a"]}, "tool_choice.function", "invalid_type"),
        ({"type": "function", "function": {"name": 5}}, "tool_choice.function.name", "invalid_type"),
        ({"type": "function"}, "tool_choice.function", "missing_required_parameter"),
        ({"type": "custom", "custom": "x"}, "tool_choice.custom", "invalid_type"),
    ]
    for choice, param, code in wrong:
        for stream in (False, True):
            error = assert_openai_error(await request(app, body(tool_choice=choice, stream=stream)), 400, param)
            assert error["code"] == code, (choice, error)
    for call in (["a"], {"name": ["a"]}, {}):
        error = assert_openai_error(await request(app, body(function_call=call)), 400)
        assert error["param"].startswith("function_call"), (call, error)
    assert provider.calls == 0
    # The shape that leaves the choice to the model is answered, as 'auto' is.
    choice = {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [WEATHER]}}
    answered = ScriptedProvider(["answer"])
    answer = await request(openai_app({"a": Agent(answered, name="a")}), body(tools=[WEATHER], tool_choice=choice))
    assert answer.status == 200 and answer.json()["choices"][0]["message"]["content"] == "answer"


async def test_client_tools_with_auto_are_ignored_as_documented() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    for fields in (
        {"tools": [WEATHER]},
        {"tools": [WEATHER], "tool_choice": "auto"},
        {"tools": [WEATHER], "tool_choice": "none"},
        {"functions": [WEATHER["function"]], "function_call": "auto"},
    ):
        provider = ScriptedProvider(["answer"])
        app = openai_app({"a": Agent(provider, tools=[add], name="a")})
        answer = await request(app, body(**fields))
        assert answer.status == 200 and answer.json()["choices"][0]["message"]["content"] == "answer"
        assert [spec.name for spec in provider.requests[0].tools] == ["add"], "the client's tools are not offered"


# --- max_tokens / max_completion_tokens ---------------------------------------------------------------------------


async def test_max_tokens_is_a_positive_integer_named_as_sent() -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    for field in ("max_tokens", "max_completion_tokens"):
        for value in (0, -1, True, 1.5, "5", 2**31):
            assert_openai_error(await request(app, body(**{field: value})), 400, param=field)
    assert provider.calls == 0


async def test_max_tokens_over_the_apps_limit_is_a_400_before_any_model_call() -> None:
    provider = ScriptedProvider(["ok", "ok", "ok"])
    app = openai_app({"a": Agent(provider, name="a")}, max_completion_tokens=1000)
    for field in ("max_tokens", "max_completion_tokens"):
        error = assert_openai_error(await request(app, body(**{field: 1001})), 400, param=field)
        assert "1000" in error["message"] and error["code"] == "invalid_value"
    assert provider.calls == 0
    assert (await request(app, body(max_completion_tokens=1000))).status == 200
    assert provider.requests[-1].max_tokens == 1000
    # An explicit null max_completion_tokens leaves max_tokens to say the limit (it was read as no limit).
    assert (await request(app, body(max_completion_tokens=None, max_tokens=7))).status == 200
    assert provider.requests[-1].max_tokens == 7
    with pytest.raises(ValueError, match="max_completion_tokens"):
        openai_app({"a": Agent(provider, name="a")}, max_completion_tokens=0)


# --- every other field: honoured, refused naming it, or accepted as documented ---------------------------------------

# Each asks for an answer no served agent gives (log probabilities, audio, a web-searched or moderated answer, a
# biased tokenizer's tokens): dropped, the client would read an answer other than the one it relies on.
UNSUPPORTED: list[tuple[dict[str, Any], str, str]] = [
    ({"logprobs": True}, "logprobs", "unsupported_value"),
    ({"logprobs": True, "top_logprobs": 5}, "logprobs", "unsupported_value"),
    ({"top_logprobs": 3}, "top_logprobs", "unsupported_parameter"),
    ({"modalities": ["text", "audio"]}, "modalities", "unsupported_value"),
    ({"audio": {"voice": "alloy", "format": "wav"}}, "audio", "unsupported_parameter"),
    ({"web_search_options": {}}, "web_search_options", "unsupported_parameter"),
    ({"moderation": {"model": "omni-moderation-latest"}}, "moderation", "unsupported_parameter"),
    ({"logit_bias": {"50256": -100}}, "logit_bias", "unsupported_parameter"),
]


@pytest.mark.parametrize(("fields", "param", "code"), UNSUPPORTED)
async def test_a_field_asking_for_an_answer_no_agent_gives_is_a_400_naming_it(
    fields: dict[str, Any], param: str, code: str
) -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    for stream in (False, True):
        error = assert_openai_error(await request(app, body(stream=stream, **fields)), 400, param=param)
        assert error["type"] == "invalid_request_error" and error["code"] == code
    assert provider.calls == 0


async def test_those_fields_at_their_defaults_change_nothing_and_are_accepted() -> None:
    provider = ScriptedProvider(["answer"])
    app = openai_app({"a": Agent(provider, name="a")})
    answer = await request(app, body(
        logprobs=False, top_logprobs=0, modalities=["text"], audio=None, web_search_options=None, moderation=None,
        logit_bias={}, n=1,
    ))
    assert answer.status == 200, answer.body[:300]
    assert answer.json()["choices"][0]["logprobs"] is None


async def test_an_unknown_field_is_a_400_naming_it_unless_the_app_ignores_it() -> None:
    provider = ScriptedProvider(["answer", "answer"])
    app = openai_app({"a": Agent(provider, name="a")})
    for field in ("top_k", "guided_json", "temprature"):
        error = assert_openai_error(await request(app, body(**{field: 1})), 400, param=field)
        assert error["code"] == "unknown_parameter" and field in error["message"]
    assert provider.calls == 0
    lenient = openai_app({"a": Agent(provider, name="a")}, ignored_fields=["top_k", "repetition_penalty"])
    answer = await request(lenient, body(top_k=40, repetition_penalty=1.1))
    assert answer.status == 200, answer.body[:300]
    assert_openai_error(await request(lenient, body(min_p=0.1)), 400, param="min_p")
    for wrong in (["logprobs"], ["temperature"], [""], [5], "top_k"):
        with pytest.raises((TypeError, ValueError), match="ignored_fields"):
            openai_app({"a": Agent(provider, name="a")}, ignored_fields=wrong)  # type: ignore[arg-type]


async def test_metadata_and_tuning_hints_are_accepted_and_change_nothing() -> None:
    provider = ScriptedProvider(["answer"])
    app = openai_app({"a": Agent(provider, name="a")})
    answer = await request(app, body(
        user="user-7f3a", safety_identifier="h-1", prompt_cache_key="k", prompt_cache_retention="24h",
        prompt_cache_options={"ttl": "30m"}, metadata={"ticket": "T-1", "team": "x" * 512}, store=True,
        service_tier="flex", parallel_tool_calls=False, presence_penalty=0.5, frequency_penalty=-2,
        verbosity="low", prediction={"type": "content", "content": "draft"},
    ))
    assert answer.status == 200, answer.body[:300]
    sent = provider.requests[0]
    assert (sent.temperature, sent.top_p, sent.seed, sent.parallel_tool_calls) == (None, None, None, None)


BAD_VALUES: list[tuple[dict[str, Any], str]] = [
    ({"user": 5}, "user"),
    ({"user": "u" * 257}, "user"),
    ({"safety_identifier": ["x"]}, "safety_identifier"),
    ({"prompt_cache_key": "k" * 257}, "prompt_cache_key"),
    ({"prompt_cache_retention": 24}, "prompt_cache_retention"),
    ({"prompt_cache_options": "30m"}, "prompt_cache_options"),
    ({"metadata": "x"}, "metadata"),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ({"metadata": {"k": 5}}, "metadata"),
    ({"metadata": {"k": "v" * 513}}, "metadata"),
    ({"metadata": {"k" * 65: "v"}}, "metadata"),
    ({"store": "yes"}, "store"),
    ({"service_tier": 5}, "service_tier"),
    ({"parallel_tool_calls": "no"}, "parallel_tool_calls"),
    ({"presence_penalty": 2.5}, "presence_penalty"),
    ({"frequency_penalty": float("nan")}, "frequency_penalty"),
    ({"frequency_penalty": "high"}, "frequency_penalty"),
    ({"verbosity": "loud"}, "verbosity"),
    ({"prediction": "draft"}, "prediction"),
    ({"logprobs": "yes"}, "logprobs"),
    ({"top_logprobs": 21}, "top_logprobs"),
    ({"top_logprobs": True}, "top_logprobs"),
    ({"modalities": "text"}, "modalities"),
    ({"modalities": ["video"]}, "modalities"),
    ({"logit_bias": [1]}, "logit_bias"),
    ({"n": 2}, "n"),
    # sampling settings, which reach the run: each value no model takes is the client's 400
    ({"temperature": 5}, "temperature"),
    ({"temperature": float("nan")}, "temperature"),
    ({"temperature": float("inf")}, "temperature"),
    ({"temperature": -0.1}, "temperature"),
    ({"temperature": 0.5, "top_p": 1.5}, "top_p"),  # named: the field at fault, not the first one read
    ({"temperature": 0.5, "seed": 2**70}, "seed"),
    ({"temperature": 0.5, "reasoning_effort": "extreme"}, "reasoning_effort"),
    ({"reasoning_effort": 3}, "reasoning_effort"),
    ({"stop": [f"s{i}" for i in range(100)]}, "stop"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"stop": [""]}, "stop"),
    ({"stop": "x" * 1001}, "stop"),
    ({"stop": [5]}, "stop"),
]


@pytest.mark.parametrize(("fields", "param"), BAD_VALUES)
async def test_a_value_no_run_can_take_is_a_400_naming_its_field(fields: dict[str, Any], param: str) -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    for stream in (False, True):
        error = assert_openai_error(await request(app, body(stream=stream, **fields)), 400, param=param)
        assert error["type"] == "invalid_request_error"
        assert "v" * 100 not in error["message"], "a client's metadata is not echoed back"
    assert provider.calls == 0


async def test_sampling_settings_and_reasoning_effort_reach_the_run() -> None:
    from agentactors import ModelSettings

    provider = ScriptedProvider(["one", "two"])
    agent = Agent(provider, name="a", settings=ModelSettings(temperature=0.9, stop=["STOP"]))
    app = openai_app({"a": agent})
    answer = await request(app, body(
        temperature=0.1, top_p=0.5, seed=7, stop=["END", "FIN"], reasoning_effort="low",
    ))
    assert answer.status == 200, answer.body[:300]
    sent = provider.requests[0]
    assert (sent.temperature, sent.top_p, sent.seed, sent.stop, sent.reasoning_effort) == (
        0.1, 0.5, 7, ("END", "FIN"), "low"
    )
    # An empty stop list asks for no stop of the client's own: the agent's stay (OpenAI reads [] as none).
    assert (await request(app, body(stop=[]))).status == 200
    assert provider.requests[1].stop == ("STOP",) and provider.requests[1].temperature == 0.9


async def test_a_setting_the_agents_model_cannot_take_is_a_400_naming_the_clients_field() -> None:
    # OpenAI's reasoning models take no stop sequences, and o3 knows three efforts: the library refuses both
    # before anything is sent.  Set by the client, that is the client's 400, not the server's 502.
    from agentactors import ModelSettings, OpenAIProvider

    provider = OpenAIProvider("o3", api_key="sk-test-not-used", base_url="http://127.0.0.1:9/v1")
    app = openai_app({
        "a": Agent(provider, name="a"),
        "own": Agent(provider, name="own", settings=ModelSettings(stop=["x"])),
    })
    for stream in (False, True):
        error = assert_openai_error(await request(app, body(stream=stream, stop=["END"])), 400, param="stop")
        assert error["code"] == "unsupported_value" and "o3" not in error["message"], error
        error = assert_openai_error(
            await request(app, body(stream=stream, reasoning_effort="max")), 400, param="reasoning_effort"
        )
        assert "'low', 'medium' or 'high'" in error["message"], error
        # The agent's own setting refused: the server's configuration, not the client's request.
        own = await request(app, {**body(stream=stream), "model": "own"})
        assert assert_openai_error(own, 502)["code"] == "upstream_error"
