"""SSE keep-alive: a served stream silent for the app's ``keepalive`` — a slow model, a long tool — gets an SSE comment
(``: keep-alive``), so a proxy's idle timeout (30 s in some corporate proxies, 60 s in nginx and AWS ALB) does not cut
it; ``keepalive=None`` sends none.  Each comment is a whole write of its own, never inside or beside an event; a
stream silent before its first chunk (the OpenAI app sends its headers with the first model answer) is started by
the comment; a client that leaves during the silence still cancels its run at once.

Driven in-process on virtual time, through the apps' ASGI interface as a server calls them: ``httpx.ASGITransport``
buffers a response whole, so it cannot show when each write came.  ``test_serve_keepalive_server.py`` serves the apps
for real and reads them with the openai SDK."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, LLMRequest, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import ErrorKind, ProviderError
from agentactors.serve import agui_app, openai_app

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

COMMENT = b": keep-alive\n\n"
CHAT = {"model": "a", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
AGUI = {"threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": [{"id": "m1", "role": "user", "content": "hi"}]}


class Server:
    """Calls an app as a server does, recording each message sent and when (virtual seconds from the call).

    ``leave_at``: the client disconnects then.  ``slow_send``: each ``data:`` write takes that long (a client that
    reads slowly), so a keep-alive has a write in flight to wait for.
    """

    def __init__(self, *, leave_at: float | None = None, slow_send: float = 0.0) -> None:
        self.leave_at = leave_at
        self.slow_send = slow_send
        self.sent: list[tuple[float, dict[str, Any]]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.t0 = 0.0

    async def __call__(self, app: Any, body: dict[str, Any], path: str) -> None:
        delivered = False
        self.t0 = anyio.current_time()

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}
            if self.leave_at is None:
                await anyio.sleep_forever()
                raise AssertionError("unreachable")
            await anyio.sleep(self.leave_at - (anyio.current_time() - self.t0))
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                await anyio.lowlevel.checkpoint()
                if self.slow_send and message.get("body", b"").startswith(b"data: "):
                    await anyio.sleep(self.slow_send)
                self.sent.append((anyio.current_time() - self.t0, message))
            finally:
                self.in_flight -= 1

        scope = {"type": "http", "method": "POST", "path": path, "root_path": "",
                 "headers": [(b"content-type", b"application/json")]}
        with anyio.fail_after(3600):
            await app(scope, receive, send)

    @property
    def status(self) -> int:
        return int(self.sent[0][1]["status"])

    def bodies(self) -> list[tuple[float, bytes]]:
        return [(at, m.get("body", b"")) for at, m in self.sent if m["type"] == "http.response.body"]

    def comments(self) -> list[float]:
        return [at for at, body in self.bodies() if body == COMMENT]

    def events(self) -> list[Any]:
        """The stream's events, each write checked to be one whole comment or one whole ``data:`` event."""
        found = []
        for _, body in self.bodies():
            if body in (b"", COMMENT):
                continue
            assert body.startswith(b"data: ") and body.endswith(b"\n\n") and body.count(b"\n\n") == 1, body[:200]
            text = body[6:-2].decode()
            found.append(text if text == "[DONE]" else json.loads(text))
        return found

    def check_gaps(self, interval: float) -> None:
        """Once started, the stream is never silent longer than ``interval`` (the headers came within it too)."""
        times = [self.sent[0][0], *(at for at, _ in self.bodies())]
        assert times[0] <= interval + 1e-6, f"the headers waited {times[0]} s"
        gaps = [b - a for a, b in pairwise(times)]
        assert max(gaps, default=0.0) <= interval + 1e-6, gaps


def slow(seconds: float, calls: list[str], text: str = "late but here") -> ScriptedProvider:
    """A model that takes ``seconds`` to answer (for ever: ``math.inf``), noting when it is cancelled."""

    async def answer(request: LLMRequest) -> str:
        calls.append("started")
        try:
            await anyio.sleep(seconds)
        except BaseException:
            calls.append("cancelled")
            raise
        calls.append("answered")
        return text

    return ScriptedProvider(answer)


# --- OpenAI ---------------------------------------------------------------------------------------------------------


async def test_an_openai_stream_silent_for_the_interval_gets_comments_and_ends_well_formed() -> None:
    calls: list[str] = []
    async with Runtime() as rt:
        app = openai_app({"a": Agent(slow(40, calls), name="a")}, runtime=rt)  # keepalive: 15 s by default
        server = Server()
        await server(app, CHAT, "/v1/chat/completions")
    assert server.status == 200
    headers = dict(server.sent[0][1]["headers"])
    assert headers[b"content-type"].startswith(b"text/event-stream")
    assert 2 <= len(server.comments()) <= 6, server.comments()
    server.check_gaps(15.0)
    events = server.events()
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "late but here"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all(at <= 40 + 1e-6 for at in server.comments()), "no comment once the run answered"
    assert calls == ["started", "answered"]


async def test_keepalive_none_sends_no_comment_and_the_headers_wait_for_the_answer() -> None:
    calls: list[str] = []
    async with Runtime() as rt:
        app = openai_app({"a": Agent(slow(40, calls), name="a")}, runtime=rt, keepalive=None)
        server = Server()
        await server(app, CHAT, "/v1/chat/completions")
    assert server.comments() == []
    assert server.sent[0][0] >= 40, "without keep-alive, the response starts with the first model answer"
    assert server.events()[-1] == "[DONE]"


async def test_a_stream_kept_alive_between_chunks_as_a_tool_runs() -> None:
    ran: list[str] = []

    @tool
    async def lookup(q: str) -> str:
        """Look something up, slowly."""
        await anyio.sleep(50)
        ran.append(q)
        return "found"

    async def answer(request: LLMRequest) -> Any:
        if not any(m.role == "tool" for m in request.messages):
            return ToolCall("c1", "lookup", {"q": "x"})
        return "done"

    async with Runtime() as rt:
        app = openai_app({"a": Agent(ScriptedProvider(answer), tools=[lookup], name="a")}, runtime=rt, keepalive=4)
        server = Server()
        await server(app, CHAT, "/v1/chat/completions")
    assert ran == ["x"]
    assert len(server.comments()) >= 10
    server.check_gaps(4.0)
    assert server.events()[-1] == "[DONE]"


async def test_a_failure_after_the_keep_alive_started_the_stream_is_an_error_event() -> None:
    async def answer(request: LLMRequest) -> Any:
        await anyio.sleep(20)
        return ProviderError("vendor said no", kind=ErrorKind.request, provider="scripted")

    async with Runtime() as rt:
        app = openai_app({"a": Agent(ScriptedProvider(answer), name="a")}, runtime=rt, keepalive=5)
        server = Server()
        await server(app, CHAT, "/v1/chat/completions")
    assert server.status == 200, "the keep-alive sent the headers before the run failed"
    assert server.comments()
    events = server.events()
    assert len(events) == 1 and events[0]["error"]["type"] == "server_error", events
    assert "vendor said no" not in json.dumps(events)
    assert server.sent[-1][1] == {"type": "http.response.body", "body": b""}


async def test_a_failure_before_the_interval_is_still_a_status() -> None:
    async def answer(request: LLMRequest) -> Any:
        await anyio.sleep(2)
        return ProviderError("vendor said no", kind=ErrorKind.request, provider="scripted")

    async with Runtime() as rt:
        app = openai_app({"a": Agent(ScriptedProvider(answer), name="a")}, runtime=rt, keepalive=5)
        server = Server()
        await server(app, CHAT, "/v1/chat/completions")
    assert server.status == 502 and server.comments() == []


async def test_a_client_that_leaves_during_the_silence_cancels_the_run_at_once() -> None:
    for interval in (5.0, None):
        calls: list[str] = []
        async with Runtime() as rt:
            tasks = rt.stats().tasks
            app = openai_app({"a": Agent(slow(math.inf, calls), name="a")}, runtime=rt, keepalive=interval)
            server = Server(leave_at=22)
            await server(app, CHAT, "/v1/chat/completions")
            ended = anyio.current_time() - server.t0
            assert 22 <= ended < 23, f"the request ended {ended} s in: not at the client's leaving"
            assert calls == ["started", "cancelled"]
            assert (len(server.comments()) >= 3) == (interval is not None)
            await anyio.sleep(1)
            assert rt.stats().tasks == tasks and rt.stats().busy == 0


async def test_a_comment_waits_for_a_write_in_flight_never_beside_it() -> None:
    """A client that reads slowly holds each write for 30 s: no comment is written while one is under way."""

    async def answer(request: LLMRequest) -> Any:
        from agentactors.messages import LLMResponse

        return LLMResponse(content="one two three")

    async with Runtime() as rt:
        app = openai_app({"a": Agent(ScriptedProvider(answer), name="a")}, runtime=rt, keepalive=5)
        server = Server(slow_send=30)
        await server(app, CHAT, "/v1/chat/completions")
    assert server.most_in_flight == 1
    assert server.events()[-1] == "[DONE]"


# --- AG-UI ----------------------------------------------------------------------------------------------------------


async def test_an_agui_stream_silent_for_the_interval_gets_comments_between_whole_events() -> None:
    calls: list[str] = []
    async with Runtime() as rt:
        app = agui_app(Agent(slow(40, calls), name="a"), runtime=rt)
        server = Server()
        await server(app, AGUI, "/")
    assert server.status == 200
    assert 2 <= len(server.comments()) <= 6, server.comments()
    server.check_gaps(15.0)
    kinds = [e["type"] for e in server.events()]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED", kinds
    assert "TEXT_MESSAGE_CONTENT" in kinds
    assert server.sent[-1][1] == {"type": "http.response.body", "body": b""}
    assert all(at <= 40 + 1e-6 for at in server.comments())


async def test_an_agui_stream_without_keepalive_has_no_comment() -> None:
    calls: list[str] = []
    async with Runtime() as rt:
        app = agui_app(Agent(slow(40, calls), name="a"), runtime=rt, keepalive=None)
        server = Server()
        await server(app, AGUI, "/")
    assert server.comments() == []
    assert [e["type"] for e in server.events()][-1] == "RUN_FINISHED"


async def test_an_agui_client_that_leaves_during_the_silence_cancels_the_run_at_once() -> None:
    calls: list[str] = []
    async with Runtime() as rt:
        tasks = rt.stats().tasks
        app = agui_app(Agent(slow(math.inf, calls), name="a"), runtime=rt, keepalive=5)
        server = Server(leave_at=22)
        await server(app, AGUI, "/")
        assert 22 <= anyio.current_time() - server.t0 < 23
        assert calls == ["started", "cancelled"]
        assert len(server.comments()) >= 3
        await anyio.sleep(1)
        assert rt.stats().tasks == tasks and rt.stats().busy == 0


async def test_an_agui_steer_waiting_for_the_live_run_is_kept_alive() -> None:
    """A post to a thread whose run is live waits for that run's next step boundary: silent, and kept alive."""
    calls: list[str] = []
    async with Runtime() as rt:
        app = agui_app(Agent(slow(40, calls, "first"), name="a"), runtime=rt, keepalive=5)
        first, second = Server(), Server()
        more = {"id": "m2", "role": "user", "content": "more"}
        steer = {**AGUI, "runId": "r2", "messages": [*AGUI["messages"], more]}
        async with anyio.create_task_group() as tg:
            tg.start_soon(first, app, AGUI, "/")
            await anyio.sleep(1)
            tg.start_soon(second, app, steer, "/")
        for server in (first, second):
            assert [e["type"] for e in server.events()][-1] in ("RUN_FINISHED", "RUN_ERROR")
            server.check_gaps(5.0)


# --- the keyword ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", ["openai", "agui"])
@pytest.mark.parametrize(
    ("value", "error"),
    [(0, ValueError), (-1.0, ValueError), (math.nan, ValueError), (math.inf, ValueError), ("15", TypeError),
     (True, TypeError), ([15], TypeError)],
)
async def test_a_keepalive_that_is_not_a_positive_finite_number_is_refused(
    factory: str, value: Any, error: type[Exception]
) -> None:
    agent = Agent(ScriptedProvider(["hi"]), name="a")
    with pytest.raises(error, match="keepalive must"):
        if factory == "openai":
            openai_app({"a": agent}, keepalive=value)
        else:
            agui_app(agent, keepalive=value)


async def test_a_keepalive_in_whole_seconds_or_none_is_taken() -> None:
    agent = Agent(ScriptedProvider(["hi"]), name="a")
    assert openai_app({"a": agent}, keepalive=30).keepalive == 30.0
    assert openai_app({"a": agent}).keepalive == 15.0
    assert agui_app(agent, keepalive=None).keepalive is None
    assert agui_app(agent, keepalive=0.5).keepalive == 0.5
