"""openai_app served on 127.0.0.1 (uvicorn on asyncio, hypercorn on trio), called with the official ``openai``
SDK, sync and async, streaming and not: the agent's tools run in the server, keys are checked on every route,
refusals come in OpenAI's error shape, a client that leaves cancels its run, admission refusals are 429s."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import openai
import pytest

from agentactors import Agent, LLMRequest, ProviderActor, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.parts import Image
from agentactors.serve import openai_app
from tests.support.services import load_example, serving

# On trio, the openai SDK's client leaves its HTTP library's nested async generators for the collector even
# after a stream was read to its end; trio reports them as ResourceWarnings.  They are the client's, not the app's.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'openai:ResourceWarning"),
]
KEY = "sk-serve-test-2f9c41d7"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

ran: list[dict[str, Any]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append({"a": a, "b": b})
    return a + b


def calculator(script: list[Any]) -> tuple[Agent[str], ScriptedProvider]:
    provider = ScriptedProvider(script)
    return Agent(provider, tools=[add], system="You add.", name="calc"), provider


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """``app`` on 127.0.0.1 with the example's server (uvicorn or hypercorn, by backend); yields ``.../v1``."""
    async with serving(app, load_example("serve_all"), probe="/v1/models") as base:
        yield base + "/v1"


@asynccontextmanager
async def clients(base: str) -> AsyncIterator[Any]:
    """``client(key=KEY)`` makes an async SDK client on ``base``; each is closed when the block ends."""
    made: list[openai.AsyncOpenAI] = []

    def client(key: str = KEY) -> openai.AsyncOpenAI:
        made.append(openai.AsyncOpenAI(base_url=base, api_key=key, max_retries=0, timeout=20))
        return made[-1]

    try:
        yield client
    finally:
        for one in made:
            await one.close()


async def test_a_completion_runs_the_agent_and_its_tools_in_the_server() -> None:
    ran.clear()
    agent, provider = calculator([ToolCall("c1", "add", {"a": 2, "b": 3}), "2 + 3 = 5"])
    async with served(openai_app({"calc": agent}, api_keys=[KEY])) as base, clients(base) as client:
        answer = await client().chat.completions.create(
            model="calc",
            messages=[{"role": "system", "content": "Answer in digits."}, {"role": "user", "content": "2+3?"}],
        )
    assert answer.object == "chat.completion" and answer.model == "calc"
    choice = answer.choices[0]
    assert choice.message.content == "2 + 3 = 5" and choice.finish_reason == "stop"
    assert choice.message.tool_calls is None, "the agent's tool calls stay in the server"
    assert ran == [{"a": 2, "b": 3}]
    system = provider.requests[0].messages[0]
    assert system.role == "system" and system.content == "You add.\n\nAnswer in digits."
    assert [spec.name for spec in provider.requests[0].tools] == ["add"]
    usage = answer.usage
    assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_a_stream_is_chat_completion_chunks_with_usage_last() -> None:
    agent, _ = calculator(["one two three four"])
    async with served(openai_app({"calc": agent}, api_keys=[KEY])) as base, clients(base) as client:
        stream = await client().chat.completions.create(
            model="calc", messages=[{"role": "user", "content": "count"}], stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1, "the text streamed in pieces"
    finishing = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishing == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert all(c.usage is None for c in chunks[:-1])


@pytest.mark.parametrize(
    ("stop", "finish"), [("max_tokens", "length"), ("content_filter", "content_filter"), ("stop_sequence", "stop")]
)
async def test_an_answer_cut_off_or_filtered_says_so_in_its_finish_reason(stop: str, finish: str) -> None:
    from agentactors.messages import LLMResponse, StopReason

    cut = LLMResponse(content="The first steps are 1) open the", stop_reason=StopReason(stop))
    agent, _ = calculator([cut, cut])
    async with served(openai_app({"calc": agent}, api_keys=[KEY])) as base, clients(base) as client:
        answer = await client().chat.completions.create(model="calc", messages=[{"role": "user", "content": "go"}])
        stream = await client().chat.completions.create(
            model="calc", messages=[{"role": "user", "content": "go"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
    assert answer.choices[0].message.content == "The first steps are 1) open the"
    assert answer.choices[0].finish_reason == finish
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [finish]


async def test_the_sync_client_streaming_and_not() -> None:
    agent, _ = calculator(["first answer", "second answer"])
    async with served(openai_app({"calc": agent}, api_keys=[KEY])) as base:

        def call() -> tuple[str | None, str]:
            sync = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=20)
            with sync:
                plain = sync.chat.completions.create(model="calc", messages=[{"role": "user", "content": "a"}])
                streamed = sync.chat.completions.create(
                    model="calc", messages=[{"role": "user", "content": "b"}], stream=True
                )
                text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
            return plain.choices[0].message.content, text

        plain, text = await anyio.to_thread.run_sync(call)
    assert (plain, text) == ("first answer", "second answer")


async def test_images_and_the_conversation_reach_the_run() -> None:
    agent, provider = calculator(["a red pixel"])
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    async with served(openai_app({"calc": agent})) as base, clients(base) as client:
        answer = await client().chat.completions.create(
            model="calc",
            messages=[
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
                {"role": "user", "content": [{"type": "text", "text": "what is it?"},
                                             {"type": "image_url", "image_url": {"url": url}}]},
            ],
        )
    assert answer.choices[0].message.content == "a red pixel"
    request: LLMRequest = provider.requests[0]
    assert [(m.role, m.content) for m in request.messages[1:]] == [
        ("user", "hello"),
        ("assistant", "hi"),
        ("user", "what is it?"),
    ]
    (image,) = request.messages[-1].media
    assert isinstance(image, Image) and image.data == PNG and image.media_type == "image/png"


async def test_every_route_needs_an_allowed_key() -> None:
    agent, _ = calculator(["never"])
    async with served(openai_app({"calc": agent}, api_keys=["other-key", KEY])) as base, clients(base) as client:
        assert [m.id for m in (await client().models.list()).data] == ["calc"]
        for key in ("wrong", KEY + "x", KEY[:-1]):
            with pytest.raises(openai.AuthenticationError) as caught:
                await client(key).models.list()
            assert caught.value.code == "invalid_api_key"
            with pytest.raises(openai.AuthenticationError):
                await client(key).chat.completions.create(model="calc", messages=[{"role": "user", "content": "x"}])
        async with httpx.AsyncClient() as raw:
            response = await raw.get(base + "/models")
        assert response.status_code == 401
        assert set(response.json()["error"]) == {"message", "type", "param", "code"}


async def test_an_unknown_model_is_404_and_a_bad_body_is_400() -> None:
    agent, provider = calculator(["never"])
    async with served(openai_app({"calc": agent}, max_body_size=4096)) as base, clients(base) as client:
        with pytest.raises(openai.NotFoundError) as caught:
            await client().chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "x"}])
        assert caught.value.code == "model_not_found"
        with pytest.raises(openai.BadRequestError) as bad:
            await client().chat.completions.create(model="calc", messages=[])
        assert bad.value.param == "messages"
        async with httpx.AsyncClient(base_url=base) as raw:
            bodies: list[Any] = [
                b"{not json",
                json.dumps([1, 2]).encode(),
                json.dumps({"model": "calc", "messages": "hi"}).encode(),
                json.dumps({"model": "calc", "messages": [{"role": "user", "content": 5}]}).encode(),
                json.dumps({"model": "calc", "messages": [{"role": "wizard", "content": "x"}]}).encode(),
                json.dumps({"model": "calc", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}).encode(),
                json.dumps({"model": "calc", "messages": [{"role": "user", "content": "x" * 5000}]}).encode(),
            ]
            for body in bodies:
                response = await raw.post("/chat/completions", content=body,
                                          headers={"content-type": "application/json"})
                assert response.status_code == 400, body[:60]
                error = response.json()["error"]
                assert error["type"] == "invalid_request_error" and error["message"]
    assert provider.calls == 0, "no refused request reached the model"


async def test_a_client_that_leaves_cancels_its_run() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def hang(request: LLMRequest) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    agent = Agent(ScriptedProvider(hang), name="slow")
    async with served(openai_app({"slow": agent})) as base, clients(base) as client:
        for stream in (False, True):
            started, cancelled = anyio.Event(), anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    lambda s=stream: client().chat.completions.create(  # type: ignore[misc]
                        model="slow", messages=[{"role": "user", "content": "x"}], stream=s
                    )
                )
                with anyio.fail_after(10):
                    await started.wait()
                tg.cancel_scope.cancel()  # the client goes away mid-run
            with anyio.fail_after(10):
                await cancelled.wait()


async def test_an_admission_refusal_is_a_429_with_retry_after() -> None:
    asked, release = anyio.Event(), anyio.Event()

    async def answer(request: LLMRequest) -> str:
        asked.set()
        await release.wait()
        return "done"

    provider = ScriptedProvider(answer)
    agent = Agent(provider, name="busy")
    async with Runtime() as rt:
        ProviderActor.shared(rt, provider, max_concurrency=1, max_waiting=0)
        async with served(openai_app({"busy": agent}, runtime=rt)) as base, clients(base) as client:
            results: list[Any] = []

            async def first() -> None:
                results.append(await client().chat.completions.create(
                    model="busy", messages=[{"role": "user", "content": "1"}]))

            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                with anyio.fail_after(10):
                    await asked.wait()
                for stream in (False, True):
                    with pytest.raises(openai.RateLimitError) as caught:
                        await client().chat.completions.create(
                            model="busy", messages=[{"role": "user", "content": "2"}], stream=stream)
                    retry_after = caught.value.response.headers["retry-after"]
                    assert retry_after.isdigit() and int(retry_after) >= 1
                release.set()
            assert results[0].choices[0].message.content == "done"


# --- sessions: X-Session-Id, opt-in ---------------------------------------------------------------------------


async def test_with_sessions_a_session_id_keeps_the_conversation_in_the_server() -> None:
    provider = ScriptedProvider(lambda request: f"answer {len(request.messages)}")
    agent = Agent(provider, name="chat")
    async with served(openai_app({"chat": agent}, sessions=True)) as base, clients(base) as client:
        first, second = client(), client()
        head = {"X-Session-Id": "conv-1"}
        one = await first.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "one"}], extra_headers=head)
        # the client sends only its new message: the server has the rest
        two = await first.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "two"}], extra_headers=head)
        # streamed turns are turns of the same session; a client that sends the whole conversation adds only
        # what follows the last assistant message
        chunks = await first.chat.completions.create(
            model="chat", stream=True, extra_headers=head, messages=[
                {"role": "user", "content": "one"}, {"role": "assistant", "content": "answer 1"},
                {"role": "user", "content": "two"}, {"role": "assistant", "content": "answer 3"},
                {"role": "user", "content": "three"}])
        streamed = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
        # without the header: stateless, as OpenAI's API is
        alone = await second.chat.completions.create(model="chat", messages=[{"role": "user", "content": "solo"}])
        # with the header but nothing new: a 400 in OpenAI's shape
        with pytest.raises(openai.BadRequestError):
            await first.chat.completions.create(
                model="chat", extra_headers=head,
                messages=[{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}])
    assert (one.choices[0].message.content, two.choices[0].message.content) == ("answer 1", "answer 3")
    assert streamed == "answer 5" and alone.choices[0].message.content == "answer 1"
    assert [[m.content for m in r.messages] for r in provider.requests] == [
        ["one"], ["one", "answer 1", "two"], ["one", "answer 1", "two", "answer 3", "three"], ["solo"]]


async def test_without_sessions_the_session_header_changes_nothing() -> None:
    provider = ScriptedProvider(lambda request: f"answer {len(request.messages)}")
    agent = Agent(provider, name="chat")
    async with served(openai_app({"chat": agent})) as base, clients(base) as client:
        for _ in range(2):
            answer = await client().chat.completions.create(
                model="chat", messages=[{"role": "user", "content": "one"}], extra_headers={"X-Session-Id": "c"})
            assert answer.choices[0].message.content == "answer 1"
    with pytest.raises(ValueError, match="sessions=True"):
        from agentactors.sessions import MemoryStore

        openai_app({"chat": agent}, store=MemoryStore())


async def test_parse_with_a_pydantic_model_gets_validated_json_of_its_schema() -> None:
    # What the SDK's structured outputs send (a strict json_schema made from the model) and read back: the served
    # agent answers the client's schema — an answer that does not fit is asked again, and never reaches the client.
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        people: int

    agent, provider = calculator(
        [
            ToolCall("c1", "final_result", {"name": "Oslo"}),
            ToolCall("c2", "final_result", {"name": "Oslo", "people": 709_000}),
            ToolCall("c3", "final_result", {"name": "Bergen", "people": 291_000}),
        ]
    )
    async with served(openai_app({"calc": agent}, api_keys=[KEY])) as base, clients(base) as client:
        parsed = await client().chat.completions.parse(
            model="calc", messages=[{"role": "user", "content": "Largest city?"}], response_format=City
        )
        async with client().chat.completions.stream(
            model="calc", messages=[{"role": "user", "content": "Second?"}], response_format=City
        ) as stream:
            final = await stream.get_final_completion()
    assert parsed.choices[0].message.parsed == City(name="Oslo", people=709_000)
    assert final.choices[0].message.parsed == City(name="Bergen", people=291_000)
    offered = provider.requests[0].tools
    assert [spec.name for spec in offered] == ["add", "final_result"], "the agent's tools, and the client's schema"
    assert set(offered[1].parameters["properties"]) == {"name", "people"}


async def test_what_a_served_agent_cannot_honour_is_a_bad_request_error() -> None:
    agent, provider = calculator(["never"])
    weather = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
    app = openai_app({"calc": agent}, api_keys=[KEY], max_completion_tokens=4096)
    # each refusal names the field at fault, with the code OpenAI's own API gives for it
    asks: list[tuple[dict[str, Any], str, str]] = [
        ({"tools": [weather], "tool_choice": "required"}, "tool_choice", "unsupported_tool_choice"),
        (
            {"tools": [weather], "tool_choice": {"type": "function", "function": {"name": "weather"}}},
            "tool_choice", "unsupported_tool_choice",
        ),
        ({"max_completion_tokens": 100_000}, "max_completion_tokens", "invalid_value"),
        ({"max_tokens": 0}, "max_tokens", "integer_below_min_value"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
            "response_format.json_schema.schema", "missing_required_parameter",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 5}}}},
            "response_format.json_schema.schema", "invalid_json_schema",
        ),
        # answers no served agent gives, and values no run can take
        ({"logprobs": True, "top_logprobs": 3}, "logprobs", "unsupported_value"),
        (
            {"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}},
            "modalities", "unsupported_value",
        ),
        ({"web_search_options": {}}, "web_search_options", "unsupported_parameter"),
        ({"logit_bias": {"50256": -100}}, "logit_bias", "unsupported_parameter"),
        ({"n": 2}, "n", "unsupported_value"),
        ({"n": 0}, "n", "integer_below_min_value"),
        ({"temperature": 5}, "temperature", "decimal_above_max_value"),
        ({"temperature": -1}, "temperature", "decimal_below_min_value"),
        ({"top_p": 1.5}, "top_p", "decimal_above_max_value"),
        ({"presence_penalty": 3}, "presence_penalty", "decimal_above_max_value"),
        ({"seed": 2**70}, "seed", "integer_above_max_value"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "array_above_max_length"),
        ({"stop": ["x" * 1001]}, "stop", "string_above_max_length"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort", "invalid_value"),
        ({"verbosity": "loud"}, "verbosity", "invalid_value"),
        ({"user": "u" * 300}, "user", "string_above_max_length"),
        ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata", "object_above_max_properties"),
        ({"extra_body": {"temperature": "hot"}}, "temperature", "invalid_type"),
        ({"extra_body": {"stream_options": 3}}, "stream_options", "invalid_type"),
        ({"extra_body": {"top_k": 40}}, "top_k", "unknown_parameter"),  # no field of OpenAI's: not read here
    ]
    async with served(app) as base, clients(base) as client:
        for stream in (False, True):
            for fields, param, code in asks:
                with pytest.raises(openai.BadRequestError) as refused:
                    await client().chat.completions.create(
                        model="calc", messages=[{"role": "user", "content": "x"}], stream=stream, **fields
                    )
                assert refused.value.status_code == 400, fields
                assert (refused.value.param, refused.value.code) == (param, code), fields
    assert provider.calls == 0


async def test_the_sdks_sampling_settings_reach_the_run_and_its_bookkeeping_is_taken() -> None:
    agent, provider = calculator(["plain", "also plain"])
    app = openai_app({"calc": agent}, api_keys=[KEY], ignored_fields=["top_k"])
    async with served(app) as base, clients(base) as client:
        answer = await client().chat.completions.create(
            model="calc", messages=[{"role": "user", "content": "x"}], temperature=0.2, top_p=0.9, seed=11,
            stop=["END"], reasoning_effort="low", presence_penalty=0.5, frequency_penalty=0.1, user="user-7f3a",
            metadata={"ticket": "T-1"}, store=False, service_tier="auto", parallel_tool_calls=True, logprobs=False,
            modalities=["text"], verbosity="low", extra_body={"top_k": 40},
        )
        assert answer.choices[0].message.content == "plain" and answer.choices[0].logprobs is None
        streamed = await client().chat.completions.create(
            model="calc", messages=[{"role": "user", "content": "x"}], stream=True, temperature=0.0,
        )
        text = "".join([c.choices[0].delta.content or "" async for c in streamed if c.choices])
    assert text == "also plain"
    sent = provider.requests[0]
    assert (sent.temperature, sent.top_p, sent.seed, sent.stop, sent.reasoning_effort) == (
        0.2, 0.9, 11, ("END",), "low"
    )
    assert provider.requests[1].temperature == 0.0


async def test_a_setting_the_agents_model_refuses_is_the_clients_bad_request() -> None:
    # o3 takes no stop sequences: the library refuses before sending (no vendor is called), and the SDK reads the
    # client's 400 naming its field, streaming or not.
    from agentactors import OpenAIProvider

    provider = OpenAIProvider("o3", api_key="sk-test-not-used", base_url="http://127.0.0.1:9/v1")
    async with served(openai_app({"r": Agent(provider, name="r")}, api_keys=[KEY])) as base, clients(base) as client:
        for stream in (False, True):
            with pytest.raises(openai.BadRequestError) as refused:
                await client().chat.completions.create(
                    model="r", messages=[{"role": "user", "content": "x"}], stop=["END"], stream=stream
                )
            assert refused.value.param == "stop" and refused.value.code == "unsupported_value"


# --- the SDK's own retries (max_retries=2 by default): never a second run of one that paused or cannot answer -------


@tool(requires_approval=True)
def transfer(amount: int) -> str:
    """Move money (a person approves each call)."""
    return "moved"


async def test_the_sdks_default_retries_never_run_a_paused_or_refused_run_again() -> None:
    # The SDK retries 409 and every 5xx unless told x-should-retry: false; each retry was a new run: the model
    # asked again, the tool's side effect done again, another run left paused.
    from agentactors.errors import ErrorKind, ProviderError

    ran.clear()
    step = [ToolCall("c1", "add", {"a": 1, "b": 2}), ToolCall("c2", "transfer", {"amount": 5})]
    paused = ScriptedProvider(lambda r: step)
    refused = ScriptedProvider(lambda r: ProviderError("unknown parameter", provider="p", kind=ErrorKind.request))
    app = openai_app({"bank": Agent(paused, tools=[add, transfer], name="bank"), "no": Agent(refused, name="no")})
    async with served(app) as base, openai.AsyncOpenAI(base_url=base, api_key="none", timeout=20) as sdk:
        assert sdk.max_retries == 2
        for stream in (False, True):
            # (streamed, the pause ends a stream the model's first answer began: an error event, never retried)
            with pytest.raises(openai.ConflictError) as caught:
                await sdk.chat.completions.create(model="bank", messages=[{"role": "user", "content": "pay"}])
            assert caught.value.code == "approval_required"
            with pytest.raises(openai.InternalServerError) as failed:
                await sdk.chat.completions.create(
                    model="no", messages=[{"role": "user", "content": "x"}], stream=stream)
            assert failed.value.status_code == 502 and failed.value.code == "upstream_error"
    assert (paused.calls, refused.calls, len(ran)) == (2, 2, 2), "one run per request, one side effect per run"


async def test_the_sdks_default_retries_still_mend_a_transient_provider_failure() -> None:
    from agentactors.errors import ErrorKind, ProviderError

    provider = ScriptedProvider([ProviderError("overloaded", provider="p", kind=ErrorKind.transient), "fine"])
    async with served(openai_app({"a": Agent(provider, name="a")})) as base:
        async with openai.AsyncOpenAI(base_url=base, api_key="none", timeout=20) as sdk:
            answer = await sdk.chat.completions.create(model="a", messages=[{"role": "user", "content": "x"}])
    assert answer.choices[0].message.content == "fine" and provider.calls == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_a_typed_output_json_cannot_carry_is_a_502_not_a_broken_response(stream: bool) -> None:
    """An ``output_validator`` may return what JSON has no form for (a NaN): the client gets OpenAI's error shape
    (a 502 before the stream began, an error event after), never a 500 traceback or a stream cut without an end."""
    from agentactors import ToolOutput

    agent = Agent(
        ScriptedProvider([ToolCall("c1", "final_result", {"response": 1.5})] * 2),
        output_type=ToolOutput(float), output_validator=lambda value: float("nan"), name="measure",
    )
    async with served(openai_app({"measure": agent}, api_keys=[KEY])) as base, clients(base) as client:
        with pytest.raises(openai.APIError) as caught:
            if stream:
                chunks = await client().chat.completions.create(
                    model="measure", messages=[{"role": "user", "content": "how long?"}], stream=True
                )
                async for _ in chunks:
                    pass
            else:
                await client().chat.completions.create(
                    model="measure", messages=[{"role": "user", "content": "how long?"}]
                )
    err = caught.value
    assert "output_unsendable" in str(err.body) + str(err), err
    if isinstance(err, openai.APIStatusError):
        assert err.status_code == 502
