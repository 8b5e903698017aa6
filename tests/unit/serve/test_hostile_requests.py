"""Hostile and odd requests to the served apps, through their ASGI interface as a server calls it: each ends in
a response or a typed error — never an exception escaping to the server (a 500 with a traceback in its log), a
thread left claimed by a request that is gone, or a ``200`` whose empty answer hides that the run did not answer.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, LLMRequest, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.events import Event
from agentactors.serve import agui_app, openai_app

pytestmark = pytest.mark.anyio

USER = {"role": "user", "content": "hello"}
JSON_TYPE = (b"content-type", b"application/json")


class Answer:
    """What an app sent for one request: its status, and its body as bytes, JSON or SSE events."""

    def __init__(self, sent: list[dict[str, Any]]) -> None:
        starts = [m for m in sent if m["type"] == "http.response.start"]
        self.status: int | None = starts[0]["status"] if starts else None
        #: The response's headers, lower-case names, decoded as latin-1.
        self.headers: dict[str, str] = {
            bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1") for k, v in starts[0].get("headers", ())
        } if starts else {}
        self.body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[dict[str, Any]]:
        lines = self.body.decode().splitlines()
        return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


async def request(
    app: Any,
    body: bytes | dict[str, Any],
    *,
    path: str = "/v1/chat/completions",
    headers: list[tuple[bytes, bytes]] | None = None,
    content_type: bytes | None = b"application/json",
) -> Answer:
    """``body`` POSTed to the ASGI ``app`` as a server does it; the client stays until the answer is complete.

    Sent as ``content_type`` (none: ``None``) unless ``headers`` name a ``content-type`` of their own."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = list(headers or [])
    if content_type is not None and not any(name.lower() == b"content-type" for name, _ in headers):
        headers.append((b"content-type", content_type))
    pending = [{"type": "http.request", "body": raw, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "root_path": "", "headers": headers}
    with anyio.fail_after(20):
        await app(scope, receive, send)
    return Answer(sent)


def assert_openai_error(answer: Answer, status: int, param: str | None = None) -> dict[str, Any]:
    assert answer.status == status, (answer.status, answer.body[:300])
    error: dict[str, Any] = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    if param is not None:
        assert error["param"] == param, error
    return error


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# --- bodies past the library's JSON policy ---------------------------------------------------------------------


async def test_a_body_nested_past_any_parser_is_a_400_not_a_recursion_error() -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    for body in (
        nested(100_000),  # past the interpreter's recursion limit: json.loads raises RecursionError
        b'{"model": "a", "messages": [{"role": "user", "content": "x"}], "metadata": ' + nested(500) + b"}",
    ):
        error = assert_openai_error(await request(app, body), 400)
        assert error["type"] == "invalid_request_error" and "deeper" in error["message"]
    agui = agui_app(Agent(provider, name="a"))
    answer = await request(agui, nested(100_000), path="/")
    assert answer.status == 400 and "deeper" in answer.json()["detail"]
    assert provider.calls == 0


async def test_an_integer_longer_than_python_reads_is_a_400() -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    body = b'{"model": "a", "messages": [{"role": "user", "content": "x"}], "n": ' + b"7" * 5000 + b"}"
    error = assert_openai_error(await request(app, body), 400)
    assert "4300 digits" in error["message"] or "4,300" in error["message"]
    agui = agui_app(Agent(provider, name="a"))
    body = b'{"threadId": "t", "runId": "r", "messages": [], "state": {"n": ' + b"7" * 5000 + b"}}"
    assert (await request(agui, body, path="/")).status == 400
    assert provider.calls == 0


async def test_a_sampling_number_beyond_any_float_is_a_400_naming_it() -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    for key in ("temperature", "top_p"):
        body = {"model": "a", "messages": [USER], key: 10**400}  # JSON has no limit on digits; float() has
        assert_openai_error(await request(app, body), 400, param=key)
    assert provider.calls == 0


async def test_a_content_length_of_non_ascii_digits_is_not_read_as_a_number() -> None:
    app = openai_app({"a": Agent(ScriptedProvider(["hi"]), name="a")})
    # "²".isdigit() is True and int("²") raises: a header the server passed on must not become a 500.
    headers = [(b"content-length", "²".encode("latin-1"))]
    assert (await request(app, {"model": "a", "messages": [USER]}, headers=headers)).status == 200


# --- tool calls a client sends in its conversation ---------------------------------------------------------------


def conversation_with_call(arguments: str) -> list[dict[str, Any]]:
    call = {"id": "call-1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
    return [USER, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call-1", "content": "found"}, {"role": "user", "content": "and?"}]


BAD_ARGUMENTS = (
    "not json",
    "[1, 2]",  # JSON, not an object
    "[" * 5000,  # past the parser's stack
    '{"n": ' + "9" * 5000 + "}",  # an integer Python refuses to read
    '{"deep": ' + "[" * 100 + "]" * 100 + "}",  # past the library's depth for arguments (64)
)


async def test_an_earlier_call_whose_arguments_are_not_an_object_is_kept_marked_not_a_500() -> None:
    provider = ScriptedProvider(["answer"] * len(BAD_ARGUMENTS) * 2)
    app = openai_app({"a": Agent(provider, name="a")})
    agui = agui_app(Agent(provider, name="a"))
    for arguments in BAD_ARGUMENTS:
        answer = await request(app, {"model": "a", "messages": conversation_with_call(arguments)})
        assert answer.status == 200, (arguments[:20], answer.body[:300])
        assert answer.json()["choices"][0]["message"]["content"] == "answer"
        call = {"id": "call-1", "function": {"name": "lookup", "arguments": arguments}}
        thread = [{"id": "u1", "role": "user", "content": "hello"},
                  {"id": "a1", "role": "assistant", "toolCalls": [call]},
                  {"id": "t1", "role": "tool", "toolCallId": "call-1", "content": "found"},
                  {"id": "u2", "role": "user", "content": "and?"}]
        events = (await request(agui, {"threadId": "t", "runId": "r", "messages": thread}, path="/")).events()
        assert events[-1]["type"] == "RUN_FINISHED", (arguments[:20], events[-1])
    for sent in provider.requests:
        (kept,) = sent.messages[1].tool_calls
        assert kept.arguments == {} and kept.arguments_error == "unparseable", "kept, marked, never run as {}"


async def test_an_earlier_call_without_a_name_is_a_400_naming_it() -> None:
    provider = ScriptedProvider(["never"])
    app = openai_app({"a": Agent(provider, name="a")})
    messages = conversation_with_call("{}")
    messages[1]["tool_calls"][0]["function"]["name"] = ""
    assert_openai_error(await request(app, {"model": "a", "messages": messages}), 400,
                        param="messages[1].tool_calls[0].function.name")
    agui = agui_app(Agent(provider, name="a"))
    call = {"id": "call-1", "function": {"name": "", "arguments": "{}"}}
    thread = [{"role": "user", "content": "x"}, {"role": "assistant", "toolCalls": [call]}]
    assert (await request(agui, {"threadId": "t", "runId": "r", "messages": thread}, path="/")).status == 422
    assert provider.calls == 0


# --- text no UTF-8 can hold, echoed back -------------------------------------------------------------------------


async def test_a_lone_surrogate_echoed_back_is_escaped_not_a_unicode_error() -> None:
    provider = ScriptedProvider(["hi"])
    app = openai_app({"a": Agent(provider, name="a")})
    # "\ud800" is valid JSON; read, it is a str that UTF-8 cannot encode
    body = b'{"model": "gpt-\\ud800", "messages": [{"role": "user", "content": "x"}]}'
    error = assert_openai_error(await request(app, body), 404)
    assert error["code"] == "model_not_found" and "gpt-\ud800" in error["message"], "echoed as it came"
    agui = agui_app(Agent(provider, name="a"))
    body = (b'{"threadId": "t-\\udc00", "runId": "r", "state": {"note": "\\ud83d"},'
            b' "messages": [{"role": "user", "content": "x"}]}')
    events = (await request(agui, body, path="/")).events()
    assert events[0]["type"] == "RUN_STARTED" and events[0]["threadId"] == "t-\udc00"
    snapshots = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert snapshots and snapshots[0]["note"] == "\ud83d"
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]


# --- AG-UI: a client that leaves before its run started ----------------------------------------------------------


async def test_a_client_that_leaves_before_its_run_started_does_not_leave_the_thread_claimed() -> None:
    provider = ScriptedProvider(["first answer", "second answer"])
    app = agui_app(Agent(provider, name="a"))
    left = anyio.Event()
    body = {"threadId": "t", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "one"}]}
    pending = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop()
        left.set()
        return {"type": "http.disconnect"}  # gone as soon as it posted

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            await left.wait()  # the client has left meanwhile
            await anyio.lowlevel.checkpoint()  # the socket write yields (hypercorn's does): the request ends here

    scope = {"type": "http", "method": "POST", "path": "/", "root_path": "", "headers": [JSON_TYPE]}
    with anyio.fail_after(20):
        await app(scope, receive, send)
    assert provider.calls == 0, "the request ended before its run started"
    # the next post to the thread — the same message again, and a new one — is a run of its own, at once
    thread = [{"id": "m1", "role": "user", "content": "one"}, {"id": "m2", "role": "user", "content": "two"}]
    events = (await request(app, {"threadId": "t", "runId": "r2", "messages": thread}, path="/")).events()
    assert events[-1]["type"] == "RUN_FINISHED" and "result" not in events[-1], events[-1]
    again = (await request(app, {"threadId": "t", "runId": "r3", "messages": thread[:1]}, path="/")).events()
    assert again[-1]["type"] == "RUN_FINISHED", "not ThreadBusy: no run of the thread is live"
    assert provider.calls == 2


# --- OpenAI: runs that end without an answer ---------------------------------------------------------------------


class RunIds:
    """A recorder keeping the id of every run it sees (the test cancels one through the runtime)."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def record(self, event: Event) -> None:
        if event.run_id is not None and event.run_id not in self.ids:
            self.ids.append(event.run_id)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_run_cancelled_in_the_server_is_an_error_not_an_empty_answer(stream: bool) -> None:
    asked = anyio.Event()

    async def hang(request: LLMRequest) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runs = RunIds()
    async with Runtime(recorders=[runs]) as rt:
        app = openai_app({"a": Agent(ScriptedProvider(hang), name="a")}, runtime=rt)
        answers: list[Answer] = []

        async def post() -> None:
            answers.append(await request(app, {"model": "a", "stream": stream, "messages": [USER]}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(post)
            with anyio.fail_after(20):
                await asked.wait()
            rt.run_ref(runs.ids[-1]).cancel()  # an operator, or the runtime draining at shutdown
    error = assert_openai_error(answers[0], 503)
    assert error["code"] == "run_cancelled" and error["type"] == "server_error"


@tool(requires_approval=True)
def transfer(amount: int) -> str:
    """Move money (a person approves each call)."""
    return "moved"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_run_paused_for_approval_says_so_not_an_empty_answer(stream: bool) -> None:
    provider = ScriptedProvider([ToolCall("call-1", "transfer", {"amount": 5}), "never"])
    app = openai_app({"bank": Agent(provider, tools=[transfer], name="bank")})
    answer = await request(app, {"model": "bank", "stream": stream, "messages": [USER]})
    if not stream:
        error = assert_openai_error(answer, 409)
    else:  # the stream had begun with the model's answer (its call): it ends with an error event, no [DONE]
        assert answer.status == 200 and b"data: [DONE]" not in answer.body
        error = answer.events()[-1]["error"]
    assert error["code"] == "approval_required" and "transfer" in error["message"]
    assert provider.calls == 1



async def test_an_unknown_model_of_a_megabyte_is_named_in_its_first_characters_only() -> None:
    app = openai_app({"a": Agent(ScriptedProvider(["hi"]), name="a")})
    name = "m" * 1_000_000
    error = assert_openai_error(await request(app, {"model": name, "messages": [{"role": "user", "content": "x"}]}),
                                404)
    assert error["code"] == "model_not_found" and len(error["message"]) < 300, len(error["message"])
    assert error["message"].startswith("The model 'mmm") and "…" in error["message"]
