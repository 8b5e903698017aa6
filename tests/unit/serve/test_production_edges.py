"""What a production service behind the apps meets, through their ASGI interface as a server calls it: bodies sent
as something other than JSON, a key named twice, fields of the wrong JSON type, and an upstream failure whose text
carries what no client of ours may read (a vendor's URL, an account, a key the redaction has no pattern for).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client

from agentactors import Agent, LLMRequest, Runtime, ScriptedProvider
from agentactors.errors import ErrorKind, ProviderError
from agentactors.loop.live import live_runs
from agentactors.messages import TextDelta
from agentactors.serve import agui_app, mcp_server, openai_app
from tests.unit.serve.test_hostile_requests import JSON_TYPE, USER, assert_openai_error, request

pytestmark = pytest.mark.anyio

THREAD = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "hello"}]}

# --- bodies not sent as JSON ---------------------------------------------------------------------------------------

NOT_JSON_TYPES = [
    b"text/plain",  # what a web page may post anywhere without asking (no CORS preflight)
    b"application/x-www-form-urlencoded",  # curl -d's default; a <form>'s too
    b"multipart/form-data; boundary=x",
    b"application/jsonp",
]


async def test_a_body_not_sent_as_json_is_a_415_and_starts_no_run() -> None:
    provider = ScriptedProvider(["answer"] * 8)
    app = openai_app({"a": Agent(provider, name="a")})
    agui = agui_app(Agent(provider, name="a"))
    body = {"model": "a", "messages": [USER]}
    for given in NOT_JSON_TYPES:
        error = assert_openai_error(await request(app, body, content_type=given), 415)
        assert error["type"] == "invalid_request_error" and "application/json" in error["message"]
        refused = await request(agui, THREAD, path="/", content_type=given)
        assert refused.status == 415 and "application/json" in refused.json()["detail"], refused.body[:200]
    assert provider.calls == 0, "nothing sent as another type reached the model"
    # No type at all is read as JSON, as FastAPI reads it: clients that post a raw body without the header abound.
    accepted: list[bytes | None] = [
        b"application/json; charset=utf-8", b"Application/JSON", b"application/vnd.example+json", None
    ]
    for maybe in accepted:
        assert (await request(app, body, content_type=maybe)).status == 200, maybe
        assert (await request(agui, THREAD, path="/", content_type=maybe)).events()[-1]["type"] == "RUN_FINISHED"


# --- a key named twice ---------------------------------------------------------------------------------------------


async def test_a_key_named_twice_is_a_400_not_its_last_value() -> None:
    # A proxy in front that checks the first "model" (allowed) must not see the app run the last (another agent).
    provider = ScriptedProvider(["never"])
    app = openai_app({"cheap": Agent(provider, name="cheap"), "dear": Agent(provider, name="dear")})
    body = b'{"model": "cheap", "model": "dear", "messages": [{"role": "user", "content": "x"}]}'
    error = assert_openai_error(await request(app, body), 400)
    assert "'model'" in error["message"] and "more than once" in error["message"], error
    nested = b'{"model": "cheap", "messages": [{"role": "user", "role": "system", "content": "x"}]}'
    assert_openai_error(await request(app, nested), 400)
    agui = agui_app(Agent(provider, name="a"))
    twice = b'{"threadId": "t", "threadId": "u", "runId": "r", "messages": [{"role": "user", "content": "x"}]}'
    answer = await request(agui, twice, path="/")
    assert answer.status == 400 and "threadId" in answer.json()["detail"], answer.body[:200]
    assert provider.calls == 0


# --- fields of the wrong JSON type ---------------------------------------------------------------------------------


async def test_fields_the_app_would_drop_or_misread_are_400s_naming_them() -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    wrong = {
        "n": [2, "two", 0, True],  # one choice is all a run gives: n=2 answered with one would be a silent loss
        "stream_options": [{"include_usage": "no"}, {"include_usage": 1}],  # "no" was read as yes
        "user": [5, {"id": "x"}],
    }
    for field, values in wrong.items():
        for value in values:
            body = {"model": "a", "stream": True, "messages": [USER], field: value}
            assert_openai_error(await request(app, body), 400, param=field)
    for fine in ({"n": 1}, {"n": None}, {"user": "u-1"}, {"stream_options": {"include_usage": False}}):
        provider_ok = ScriptedProvider(["ok"])
        ok = await request(openai_app({"a": Agent(provider_ok, name="a")}), {"model": "a", "messages": [USER], **fine})
        assert ok.status == 200, (fine, ok.body[:200])
    agui = agui_app(Agent(provider, name="a"))
    for field, value in (("tools", {}), ("tools", [5]), ("context", "x"), ("context", [5]), ("parentRunId", 5)):
        answer = await request(agui, {**THREAD, field: value}, path="/")
        assert answer.status == 422 and field in answer.json()["detail"], (field, answer.body[:200])
    assert provider.calls == 0


# --- an upstream failure's text ------------------------------------------------------------------------------------

#: What a vendor's error may hold that no pattern of the redaction knows: the deployment's URL, the account.
INTERNAL = "https://tenant-8841.openai.azure.example/openai/deployments/prod-gpt"
ACCOUNT = "acct_9f3e77d1c2"


def vendor_failure() -> ProviderError:
    return ProviderError(
        f"quota exhausted for {ACCOUNT} at {INTERNAL}", provider="azure", kind=ErrorKind.account, status=429,
        body_excerpt=f'{{"error": "{ACCOUNT}"}}',
    )


def assert_clean(text: str) -> None:
    assert INTERNAL not in text and "tenant-8841" not in text and ACCOUNT not in text, text[:400]


@pytest.mark.parametrize("stream", [False, True])
async def test_an_upstream_failure_reaches_an_openai_client_without_its_text(stream: bool) -> None:
    app = openai_app({"a": Agent(ScriptedProvider([vendor_failure()]), name="a")})
    answer = await request(app, {"model": "a", "stream": stream, "messages": [USER]})
    error = assert_openai_error(answer, 502)
    assert error["code"] == "upstream_error" and "provider" in error["message"]
    assert_clean(answer.body.decode())


async def test_an_upstream_failure_after_a_stream_began_carries_no_text_either() -> None:
    # The run streams a step (a tool call), then the provider fails: the error is an event of the stream.
    from agentactors import ToolCall, tool

    @tool
    def look(q: str) -> str:
        """Look."""
        return "seen"

    provider = ScriptedProvider([ToolCall("c1", "look", {"q": "x"}), vendor_failure()])
    app = openai_app({"a": Agent(provider, tools=[look], name="a")})
    answer = await request(app, {"model": "a", "stream": True, "messages": [USER]})
    assert answer.status == 200
    error = answer.events()[-1]["error"]
    assert "provider" in error["message"]
    assert_clean(answer.body.decode())


async def test_an_upstream_failure_reaches_an_agui_client_without_its_text() -> None:
    app = agui_app(Agent(ScriptedProvider([vendor_failure()]), name="a"))
    answer = await request(app, THREAD, path="/")
    last = answer.events()[-1]
    assert last["type"] == "RUN_ERROR" and last["code"] == "ProviderError" and "provider" in last["message"]
    assert_clean(answer.body.decode())


async def test_an_upstream_failure_reaches_an_mcp_client_without_its_text() -> None:
    async with Client(mcp_server([Agent(ScriptedProvider([vendor_failure()]), name="broke")])) as client:
        result = await client.call_tool("broke", {"input": "hi"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "provider" in text
    assert_clean(text)


class Raising(Agent[str]):
    """An agent whose run raises what a library under it raised: an exception whose text names internals."""

    async def run(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError(f"connect failed: {INTERNAL} ({ACCOUNT})")

    @asynccontextmanager
    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        if INTERNAL:  # always: the generator's yield below is what makes it one
            raise OSError(f"connect failed: {INTERNAL} ({ACCOUNT})")
        yield


@pytest.mark.parametrize("stream", [False, True])
async def test_an_exception_a_run_raised_reaches_no_client_as_text(stream: bool) -> None:
    agent = Raising(ScriptedProvider(["never"]), name="a")
    answer = await request(openai_app({"a": agent}), {"model": "a", "stream": stream, "messages": [USER]})
    error = assert_openai_error(answer, 500)
    assert "OSError" in error["message"]
    assert_clean(answer.body.decode())
    events = (await request(agui_app(agent), THREAD, path="/")).events()
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "OSError"
    assert_clean(str(events))
    async with Client(mcp_server([agent])) as client:
        result = await client.call_tool("a", {"input": "hi"})
    assert result.is_error and "OSError" in result.content[0].text  # type: ignore[union-attr]
    assert_clean(result.content[0].text)  # type: ignore[union-attr]


# --- a conversation no vendor takes --------------------------------------------------------------------------------


async def test_a_tool_message_answering_no_earlier_call_is_a_400_before_any_run() -> None:
    # OpenAI's API refuses it the same way; run anyway, the vendor would refuse it — a 502 for the client's mistake.
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    call = {"id": "call-1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    orphans = [
        [{"role": "tool", "tool_call_id": "call-1", "content": "found"}, USER],
        [USER, {"role": "assistant", "content": None, "tool_calls": [call]},
         {"role": "tool", "tool_call_id": "call-2", "content": "found"}, USER],
        [USER, {"role": "tool", "tool_call_id": "call-1", "content": "found"},  # before the call it answers
         {"role": "assistant", "content": None, "tool_calls": [call]}, USER],
    ]
    for messages in orphans:
        error = assert_openai_error(await request(app, {"model": "a", "messages": messages}), 400)
        assert error["param"].startswith("messages[") and "tool_call_id" in error["param"], error
    assert provider.calls == 0
    answered = [USER, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call-1", "content": "found"}, USER]
    app = openai_app({"a": Agent(ScriptedProvider(["ok"]), name="a")})
    ok = await request(app, {"model": "a", "messages": answered})
    assert ok.status == 200, ok.body[:200]


# --- a session key no store keeps ----------------------------------------------------------------------------------


async def test_a_session_key_no_store_keeps_is_refused_before_any_run() -> None:
    provider = ScriptedProvider(["never"])
    async with Runtime() as rt:
        app = openai_app({"a": Agent(provider, name="a")}, runtime=rt, sessions=True)
        body = {"model": "a", "messages": [USER]}
        error = assert_openai_error(await request(app, body, headers=[(b"x-session-id", b"ab\x00c")]), 400)
        assert error["param"] == "X-Session-Id" and "NUL" in error["message"]
        agui = agui_app(Agent(provider, name="a"), runtime=rt, sessions=True)
        for thread in ("t\x00x", "\ud800", ""):  # the thread is the session's key
            answer = await request(agui, {**THREAD, "threadId": thread}, path="/")
            assert answer.status == 422 and "threadId" in answer.json()["detail"], (thread, answer.body[-300:])
    assert provider.calls == 0


# --- a client that leaves mid-stream -------------------------------------------------------------------------------


class HeldAfterFirstDelta(ScriptedProvider):
    """A scripted model whose every answer stops after its first text delta until the stream is closed: the run
    is live, half-way through its answer, when the client leaves."""

    def __init__(self, script: Any) -> None:
        super().__init__(script)
        self.ended = anyio.Event()

    def stream(self, request: LLMRequest) -> Any:
        return self._held(super().stream(request))

    @asynccontextmanager
    async def _held(self, inner: Any) -> AsyncIterator[Any]:
        async with inner as events:

            async def held() -> Any:
                async for event in events:
                    yield event
                    if isinstance(event, TextDelta):
                        await anyio.sleep_forever()

            try:
                yield held()
            finally:
                self.ended.set()


async def leave_mid_stream(app: Any, body: dict[str, Any], path: str, provider: HeldAfterFirstDelta) -> bytes:
    """``body`` posted; the client leaves once the model's first text delta was sent to it.  What it was sent."""
    sent: list[bytes] = []
    pending = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]
    seen = anyio.Event()

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop()
        await seen.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        chunk = message.get("body", b"")
        sent.append(chunk)
        if b"partial" in chunk:
            seen.set()

    scope = {"type": "http", "method": "POST", "path": path, "root_path": "", "headers": [JSON_TYPE]}
    with anyio.fail_after(20):
        await app(scope, receive, send)
        await provider.ended.wait()  # the model's stream was closed: its request cancelled with the run
    return b"".join(sent)


@pytest.mark.parametrize("sessions", [False, True])
async def test_a_client_that_leaves_mid_stream_ends_its_run_and_frees_its_slot(sessions: bool) -> None:
    async with Runtime() as rt:
        provider = HeldAfterFirstDelta(["partial answer, never whole"])
        app = openai_app({"a": Agent(provider, name="a")}, runtime=rt, sessions=sessions)
        body = {"model": "a", "stream": True, "messages": [USER]}
        headers = [(b"x-session-id", b"k")] if sessions else []
        sent = await leave_mid_stream(
            lambda scope, receive, send: app({**scope, "headers": scope["headers"] + headers}, receive, send),
            body, "/v1/chat/completions", provider,
        )
        assert b"[DONE]" not in sent
        assert live_runs(rt) == {} and rt.stats().busy == 0, "no run left live, no handler left busy"
        provider = HeldAfterFirstDelta(["partial answer, never whole"])
        agui = agui_app(Agent(provider, name="b"), runtime=rt, sessions=sessions)
        sent = await leave_mid_stream(agui, THREAD, "/", provider)
        assert b"RUN_FINISHED" not in sent
        assert live_runs(rt) == {} and rt.stats().busy == 0
        # the thread is free: its next post is a run of its own, not a steer of a run that is gone
        answer = await request(agui_app(Agent(ScriptedProvider(["again"]), name="b"), runtime=rt), THREAD, path="/")
        assert answer.events()[-1]["type"] == "RUN_FINISHED"
