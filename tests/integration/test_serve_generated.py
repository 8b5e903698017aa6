"""Generated requests to ``openai_app`` and ``agui_app`` served on 127.0.0.1 (uvicorn on asyncio, hypercorn on
trio), sent with the official ``openai`` SDK and httpx: the end-to-end half of
``tests/unit/serve/test_served_properties.py`` (which drives the apps' ASGI interface on virtual time, many more
examples).  Here a real server parses the requests, the SDK parses the answers, and a client that closes its
connection part way through a stream is seen by the server as a real disconnect.

One server per test; hypothesis draws the requests in a worker thread, each sent on the test's event loop
(``anyio.from_thread``), so the server is started once, not once per example.  Real clocks, generous bounds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import attrs
import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors import Agent, LLMRequest, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import Usage
from agentactors.serve import agui_app, openai_app
from tests.support.services import load_example, serving

# On trio, the SDK's and httpx's nested async generators are left for the collector when a client closes a stream it
# has not read to its end (on purpose, here); trio reports them as ResourceWarnings.  They are the client's.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore.:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx.:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'openai:ResourceWarning"),
]
KEY = "sk-gen-8e1f20c3d4"
EXAMPLES = 15
BOUND = 20.0  # real seconds a request may take before it counts as a hang
USAGE = Usage(input_tokens=5, output_tokens=2)


@tool
def double(x: int) -> int:
    """Double an integer."""
    return 2 * x


@attrs.define
class Script:
    """What the served agent's provider does now (set per example), and what its calls became."""

    behaviour: str = "text"
    started: int = 0
    cancelled: int = 0
    finished: int = 0

    def provider(self) -> ScriptedProvider:
        async def answer(request: LLMRequest) -> Any:
            self.started += 1
            try:
                await anyio.sleep(3600 if self.behaviour == "hang" else 0)
            except BaseException:
                self.cancelled += 1
                raise
            self.finished += 1
            if self.behaviour == "provider_error":
                return ProviderError(f"vendor refused key {KEY}", kind=ErrorKind.request, provider="scripted")
            if self.behaviour == "tool" and not any(m.role == "tool" for m in request.messages):
                return LLMResponse(tool_calls=[ToolCall("call-1", "double", {"x": 21})], usage=USAGE)
            return LLMResponse(content="forty two, in several words", usage=USAGE)

        return ScriptedProvider(answer)


valid_bodies = st.fixed_dictionaries(
    {"messages": st.lists(st.fixed_dictionaries({
        "role": st.sampled_from(["system", "developer", "user", "assistant"]), "content": st.text(max_size=12)}),
        max_size=3).map(lambda head: [*head, {"role": "user", "content": "hi"}]),
     "stream": st.booleans()},
    optional={
        "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
        "temperature": st.floats(0, 2),
        "max_tokens": st.integers(1, 4096),
        "max_completion_tokens": st.integers(1, 4096),
        "n": st.just(1),
        "tool_choice": st.sampled_from(["auto", "none"]),
        "tools": st.just([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]),
        "response_format": st.just({"type": "text"}),
        "user": st.text(max_size=20),
        "seed": st.integers(-(2**63), 2**63 - 1),
    },
)
hostile = st.one_of(
    st.sampled_from([b"", b"{", b"[]", b'{"model": "agent"}', b'{"model": "agent", "messages": []}',
                     b'{"model": 3, "messages": "x"}', b'{"model": "nope", "messages": [{"role": "user"}]}',
                     b'{"model": "agent", "messages": [{"role": "user", "content": "x"}], "temprature": 1}',
                     b'{"model": "agent", "messages": [{"role": "user", "content": "x"}], "n": 2}']),
    st.integers(50, 400).map(lambda d: b'{"model": "agent", "messages": ' + b"[" * d + b"]" * d + b"}"),
)


def run_in_thread(test: Callable[[], None]) -> Any:
    """Hypothesis' loop in a worker thread (its examples call back into the event loop)."""
    return anyio.to_thread.run_sync(test)


async def test_generated_chat_requests_through_the_sdk_end_as_documented() -> None:
    script = Script()
    async with Runtime() as rt:
        app = openai_app({"agent": Agent(script.provider(), tools=[double], name="agent")}, runtime=rt,
                         api_keys=[KEY])
        async with serving(app, load_example("serve_all"), probe="/v1/models") as base:
            sdk = openai.AsyncOpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0, timeout=BOUND)
            raw = httpx.AsyncClient(base_url=base + "/v1", timeout=BOUND)

            async def valid(body: dict[str, Any], behaviour: str) -> None:
                script.behaviour = behaviour
                with anyio.fail_after(BOUND):
                    if behaviour == "provider_error":  # a 502 before the stream began (an SDK error either way)
                        with pytest.raises(openai.APIError) as caught:
                            await complete(body)
                        said = caught.value.response.text if isinstance(caught.value, openai.APIStatusError) else (
                            str(caught.value.body))
                        assert not isinstance(caught.value, openai.APIStatusError) or caught.value.status_code == 502
                        assert KEY not in said and "vendor" not in said, said
                    else:
                        await complete(body, calls=2 if behaviour == "tool" else 1)

            async def complete(body: dict[str, Any], calls: int = 1) -> None:
                if body["stream"]:
                    stream = await sdk.chat.completions.create(model="agent", **body)
                    chunks = [chunk async for chunk in stream]  # the SDK stops at [DONE]
                    assert chunks and chunks[0].choices[0].delta.role == "assistant"
                    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                    assert text == "forty two, in several words"
                    if (body.get("stream_options") or {}).get("include_usage"):
                        usage = chunks[-1].usage
                        assert usage is not None and usage.prompt_tokens == USAGE.input_tokens * calls
                        assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
                else:
                    answer = await sdk.chat.completions.create(model="agent", **body)
                    assert answer.choices[0].message.content == "forty two, in several words"
                    assert answer.usage is not None and answer.usage.prompt_tokens == USAGE.input_tokens * calls
                    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens

            async def bad(body: bytes, key: str | None, content_type: str) -> None:
                headers = {"content-type": content_type}
                if key is not None:
                    headers["authorization"] = f"Bearer {key}"
                with anyio.fail_after(BOUND):
                    response = await raw.post("/chat/completions", content=body, headers=headers)
                assert response.status_code in (400, 401, 404, 415), (response.status_code, response.text[:200])
                assert set(response.json()["error"]) == {"message", "type", "param", "code"}
                assert KEY not in response.text and "Traceback" not in response.text
                if key != KEY:
                    assert response.status_code == 401

            @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
            @given(body=valid_bodies, behaviour=st.sampled_from(["text", "tool", "provider_error"]))
            def valid_requests(body: dict[str, Any], behaviour: str) -> None:
                anyio.from_thread.run(valid, body, behaviour)

            @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
            @given(body=hostile, key=st.sampled_from([KEY, KEY, None, "sk-wrong"]),
                   content_type=st.sampled_from(["application/json", "application/json", "text/plain"]))
            def hostile_requests(body: bytes, key: str | None, content_type: str) -> None:
                anyio.from_thread.run(bad, body, key, content_type)

            try:
                await run_in_thread(valid_requests)
                await run_in_thread(hostile_requests)
            finally:
                await sdk.close()
                await raw.aclose()
        assert script.started == script.finished + script.cancelled


async def wait_released(rt: Runtime, script: Script, tasks: int) -> None:
    """Until the provider's call was cancelled and the runtime's tasks are back to ``tasks`` (real time, bounded)."""
    with anyio.fail_after(BOUND):
        while script.started != script.finished + script.cancelled or rt.stats().tasks != tasks or rt.stats().busy:  # noqa: ASYNC110 - the server's tasks change them
            await anyio.sleep(0.02)


async def test_a_client_that_closes_a_stream_part_way_cancels_its_run() -> None:
    script = Script()
    async with Runtime() as rt:
        app = openai_app({"agent": Agent(script.provider(), tools=[double], name="agent")}, runtime=rt)
        async with serving(app, load_example("serve_all"), probe="/v1/models") as base:
            tasks = rt.stats().tasks
            async with httpx.AsyncClient(base_url=base + "/v1", timeout=BOUND) as client:
                for behaviour, read in [("hang", 0), ("text", 1), ("tool", 2), ("text", 3), ("hang", 0)]:
                    script.behaviour = behaviour
                    body = {"model": "agent", "stream": read > 0 or behaviour == "hang",
                            "messages": [{"role": "user", "content": "hi"}]}
                    before = script.cancelled
                    with anyio.move_on_after(0.5 if behaviour == "hang" else BOUND):
                        async with client.stream("POST", "/chat/completions", json=body) as response:
                            async with aclosing(response.aiter_lines()) as lines:  # type: ignore[type-var]
                                for _ in range(read):
                                    await anext(lines)
                    # the connection is closed: a hanging run is cancelled, one that answered has ended
                    await wait_released(rt, script, tasks)
                    if behaviour == "hang":
                        assert script.cancelled == before + 1


async def test_an_agui_client_that_leaves_cancels_its_run_and_the_next_post_runs() -> None:
    script = Script(behaviour="hang")
    async with Runtime() as rt:
        app = agui_app(Agent(script.provider(), name="agent"), runtime=rt, sessions=True)
        async with serving(app, load_example("serve_all"), probe="/") as base:
            body = {"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
            async with httpx.AsyncClient(base_url=base, timeout=BOUND) as client:
                with anyio.move_on_after(0.5):
                    async with client.stream("POST", "/", json=body) as response, aclosing(
                        response.aiter_lines()  # type: ignore[type-var]
                    ) as lines:
                        async for _ in lines:
                            pass
                with anyio.fail_after(BOUND):
                    while script.cancelled != 1:  # noqa: ASYNC110 - the server's task changes it
                        await anyio.sleep(0.02)
                script.behaviour = "text"
                response = await client.post("/", json={**body, "runId": "r2"})
            events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
            assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED", events[-1]
