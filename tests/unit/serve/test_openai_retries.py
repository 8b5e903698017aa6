"""Which of openai_app's errors an OpenAI SDK may retry on its own: the official SDKs retry 408, 409, 429 and every
5xx (``max_retries=2`` by default) unless the answer carries ``x-should-retry: false``.  A retry re-runs the agent
and its tools, so every error a retry would repeat work for, or cannot mend, says ``false``; an admission refusal
(429), a run cancelled in the server (503) and a transient provider failure keep the SDK's retry — unless a tool
had already run.  Through the app's ASGI interface; ``tests/integration/test_serve_openai.py`` calls it with the SDK.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from agentactors import Agent, Capabilities, LLMRequest, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import ErrorKind, OverloadedError, ProviderError
from agentactors.serve import openai_app
from tests.unit.serve.test_hostile_requests import USER, Answer, RunIds, assert_openai_error, request

pytestmark = pytest.mark.anyio

BODY = {"model": "a", "messages": [USER]}
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
notes: list[str] = []


@tool
def note(text: str) -> str:
    """Write a note down (a side effect)."""
    notes.append(text)
    return "noted"


@tool(requires_approval=True)
def transfer(amount: int) -> str:
    """Move money (a person approves each call)."""
    return "moved"


@dataclasses.dataclass
class Pick:
    label: str


def no_retry(answer: Answer, status: int, code: str | None) -> None:
    if answer.status == 200:  # a stream that began with the model's first answer: it ends with an error event,
        # which no SDK retries (they retry on the response's status, read before the first event)
        assert answer.events()[-1]["error"]["code"] == code, answer.body[-300:]
        return
    error = assert_openai_error(answer, status)
    assert error["code"] == code, error
    assert answer.headers.get("x-should-retry") == "false", (status, code, answer.headers)


def retry_kept(answer: Answer, status: int, code: str | None) -> None:
    error = assert_openai_error(answer, status)
    assert error["code"] == code, error
    assert "x-should-retry" not in answer.headers, (status, code, answer.headers)


def failing(kind: ErrorKind) -> ProviderError:
    return ProviderError("the vendor said no", provider="p", kind=kind)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_run_paused_for_approval_is_not_retried(stream: bool) -> None:
    # What the SDK's default retries did: three runs, the side effect three times, three paused runs.
    notes.clear()
    step = [ToolCall("c1", "note", {"text": "x"}), ToolCall("c2", "transfer", {"amount": 5})]
    provider = ScriptedProvider(lambda r: step)
    app = openai_app({"a": Agent(provider, tools=[note, transfer], name="a")})
    no_retry(await request(app, {**BODY, "stream": stream}), 409, "approval_required")
    assert notes == ["x"]


async def test_a_turn_to_a_paused_session_is_not_retried() -> None:
    provider = ScriptedProvider(lambda r: ToolCall("c1", "transfer", {"amount": 5}))
    async with Runtime() as rt:
        app = openai_app({"a": Agent(provider, tools=[transfer], name="a")}, runtime=rt, sessions=True)
        session = [(b"x-session-id", b"s1")]
        no_retry(await request(app, BODY, headers=session), 409, "approval_required")
        no_retry(await request(app, BODY, headers=session), 409, "session_conflict")
    assert provider.calls == 1


async def test_an_exception_the_run_raised_is_not_retried() -> None:
    rt = Runtime()
    async with rt:
        pass
    app = openai_app({"a": Agent(ScriptedProvider(["never"]), name="a")}, runtime=rt)  # closed: every run raises
    no_retry(await request(app, BODY), 500, None)


@pytest.mark.parametrize("kind", [ErrorKind.request, ErrorKind.account, ErrorKind.context, ErrorKind.content_policy])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_provider_failure_a_retry_cannot_mend_is_not_retried(kind: ErrorKind, stream: bool) -> None:
    app = openai_app({"a": Agent(ScriptedProvider(lambda r: failing(kind)), name="a")})
    no_retry(await request(app, {**BODY, "stream": stream}), 502, "upstream_error")


@pytest.mark.parametrize("kind", [ErrorKind.transient, ErrorKind.circuit_open])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_transient_provider_failure_keeps_the_clients_retry(kind: ErrorKind, stream: bool) -> None:
    app = openai_app({"a": Agent(ScriptedProvider(lambda r: failing(kind)), name="a")})
    retry_kept(await request(app, {**BODY, "stream": stream}), 502, "upstream_error")


async def test_a_transient_failure_after_a_tool_ran_is_not_retried() -> None:
    notes.clear()
    provider = ScriptedProvider([ToolCall("c1", "note", {"text": "x"}), failing(ErrorKind.transient)])
    app = openai_app({"a": Agent(provider, tools=[note], name="a")})
    no_retry(await request(app, BODY), 502, "upstream_error")
    assert notes == ["x"]


async def test_an_admission_refusal_keeps_the_clients_retry_unless_a_tool_ran() -> None:
    busy = OverloadedError("at capacity", provider="p", retry_after=2.0)
    app = openai_app({"a": Agent(ScriptedProvider([busy]), name="a")})
    answer = await request(app, BODY)
    retry_kept(answer, 429, "rate_limit_exceeded")
    assert answer.headers["retry-after"] == "2"
    provider = ScriptedProvider([ToolCall("c1", "note", {"text": "x"}), busy])
    app = openai_app({"a": Agent(provider, tools=[note], name="a")})
    no_retry(await request(app, BODY), 429, "rate_limit_exceeded")


async def cancelled_answer(provider: ScriptedProvider, asked: anyio.Event, tools: list[Any]) -> Answer:
    runs = RunIds()
    async with Runtime(recorders=[runs]) as rt:
        app = openai_app({"a": Agent(provider, tools=tools, name="a")}, runtime=rt)
        answers: list[Answer] = []

        async def post() -> None:
            answers.append(await request(app, BODY))

        async with anyio.create_task_group() as tg:
            tg.start_soon(post)
            with anyio.fail_after(20):
                await asked.wait()
            rt.run_ref(runs.ids[-1]).cancel()
    return answers[0]


def hanging(asked: anyio.Event, first: Any = None) -> Callable[[LLMRequest], Awaitable[Any]]:
    async def answer(request: LLMRequest) -> Any:
        if first is not None and len(request.messages) == 1:
            return first
        asked.set()
        await anyio.sleep_forever()

    return answer


async def test_a_run_cancelled_in_the_server_keeps_the_clients_retry_unless_a_tool_ran() -> None:
    asked = anyio.Event()
    retry_kept(await cancelled_answer(ScriptedProvider(hanging(asked)), asked, []), 503, "run_cancelled")
    notes.clear()
    asked = anyio.Event()
    provider = ScriptedProvider(hanging(asked, ToolCall("c1", "note", {"text": "x"})))
    no_retry(await cancelled_answer(provider, asked, [note]), 503, "run_cancelled")
    assert notes == ["x"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_typed_run_without_a_valid_answer_is_not_retried(stream: bool) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY, "strict": True}}
    provider = ScriptedProvider(['{"city": 1}'] * 2, capabilities=Capabilities(response_format=True))
    app = openai_app({"a": Agent(provider, name="a", output_retries=1)})
    no_retry(await request(app, {**BODY, "response_format": fmt, "stream": stream}), 502, "response_format_unmet")
    provider = ScriptedProvider([ToolCall("c1", "final_result", {"label": 1})] * 2)
    app = openai_app({"a": Agent(provider, name="a", output_type=Pick, output_retries=1)})
    no_retry(await request(app, {**BODY, "stream": stream}), 502, "output_invalid")
    provider = ScriptedProvider([ToolCall("c1", "note", {"text": "x"})])
    app = openai_app({"a": Agent(provider, tools=[note], name="a", output_type=Pick, max_steps=1)})
    no_retry(await request(app, {**BODY, "stream": stream}), 502, "no_answer")


async def test_a_client_error_says_no_retry_too() -> None:
    # The SDKs do not retry these anyway; the header says so to any client that would.
    app = openai_app({"a": Agent(ScriptedProvider(["never"]), name="a")}, api_keys=["k"])
    key = [(b"authorization", b"Bearer k")]
    no_retry(await request(app, BODY), 401, "invalid_api_key")
    no_retry(await request(app, {**BODY, "model": "b"}, headers=key), 404, "model_not_found")
    no_retry(await request(app, {**BODY, "n": 2}, headers=key), 400, assert_openai_error(
        await request(app, {**BODY, "n": 2}, headers=key), 400)["code"])
    no_retry(await request(app, b"{", headers=key), 400, None)
    no_retry(await request(app, BODY, headers=key, content_type=b"text/plain"), 415, None)


async def test_a_session_store_that_failed_is_the_servers_fault_not_a_conflict(tmp_path: Any) -> None:
    """A session database locked past its busy_timeout is a 500 told by its class, not a 409 "session_conflict"
    carrying its text: the client did nothing wrong, and the server's path is none of its business."""
    import sqlite3

    from agentactors.sessions.sqlite import SqliteStore

    path = tmp_path / "private-sessions.db"
    provider = ScriptedProvider(["hello", "again"])
    async with Runtime() as rt:
        store = SqliteStore(path, busy_timeout=0.1)
        app = openai_app({"a": Agent(provider, name="a")}, runtime=rt, sessions=True, store=store)
        session = [(b"x-session-id", b"s1")]
        assert (await request(app, BODY, headers=session)).status == 200
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN EXCLUSIVE")
            answer = await request(app, BODY, headers=session)
        finally:
            holder.close()
        await store.aclose()
    no_retry(answer, 500, None)
    assert "private-sessions" not in answer.body.decode() and "SqliteStoreError" in answer.body.decode(), answer.body
