"""A server whose ``send`` raises once the client has gone (ASGI HTTP 2.4: "a server-specific subclass of
``OSError``"), before the app's ``receive`` has delivered ``http.disconnect``: the app takes it as the client
leaving — its run is cancelled, nothing escapes to the server (which would log a traceback for every client that
left), and a resumed AG-UI run still goes on.  Found by ``test_served_properties.py`` on trio, whose scheduler
may run the app's next ``send`` before the task watching ``receive`` sees the disconnect."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, LLMRequest, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.serve import agui_app, openai_app

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Gone(OSError):
    """What the server's ``send`` raises once the client has gone (uvicorn's would be ``ClientDisconnected``)."""


class Server:
    """Calls an app as a server whose ``send`` raises :class:`Gone` from the ``fail_at``-th message on (0 the
    first), while its ``receive`` never says the client left."""

    def __init__(self, fail_at: int) -> None:
        self.fail_at = fail_at
        self.sent: list[dict[str, Any]] = []
        self.refused = 0

    async def __call__(self, app: Any, body: dict[str, Any], path: str) -> None:
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            await anyio.lowlevel.checkpoint()
            if len(self.sent) >= self.fail_at:
                self.refused += 1
                raise Gone("the client has gone")
            self.sent.append(message)

        scope = {"type": "http", "method": "POST", "path": path, "root_path": "",
                 "headers": [(b"content-type", b"application/json")]}
        with anyio.fail_after(600):
            await app(scope, receive, send)


@tool
def double(x: int) -> int:
    """Double an integer."""
    return 2 * x


def slow_after_first(calls: list[str]) -> ScriptedProvider:
    """Answers at once the first time (so a stream starts), then waits an hour — unless cancelled."""

    async def answer(request: LLMRequest) -> str:
        calls.append("started")
        try:
            await anyio.sleep(0 if len(calls) == 1 else 3600)
        except BaseException:
            calls.append("cancelled")
            raise
        calls.append("answered")
        return "an answer in words"

    return ScriptedProvider(answer)


@pytest.mark.parametrize(("stream", "fail_at"), [(False, 0), (True, 0), (True, 1), (True, 2), (True, 3)])
async def test_an_openai_send_that_raises_ends_the_request_quietly(stream: bool, fail_at: int) -> None:
    calls: list[str] = []
    async with Runtime() as rt:
        tasks = rt.stats().tasks
        app = openai_app({"a": Agent(slow_after_first(calls), name="a")}, runtime=rt)
        server = Server(fail_at)
        await server(app, {"model": "a", "stream": stream, "messages": [{"role": "user", "content": "hi"}]},
                     "/v1/chat/completions")  # raises nothing
        assert server.refused == 1, "nothing is sent once the server said the client has gone"
        await anyio.sleep(1)
        assert rt.stats().tasks == tasks and rt.stats().busy == 0


async def test_a_send_that_raises_cancels_the_run_it_streams() -> None:
    calls: list[str] = []

    async def answer(request: LLMRequest) -> Any:
        if not any(m.role == "tool" for m in request.messages):
            return ToolCall("c1", "double", {"x": 2})  # answered at once: the stream starts
        calls.append("started")
        try:
            await anyio.sleep(3600)
        except BaseException:
            calls.append("cancelled")
            raise
        return "never"  # pragma: no cover

    async with Runtime() as rt:
        tasks = rt.stats().tasks
        app = openai_app({"a": Agent(ScriptedProvider(answer), tools=[double], name="a")}, runtime=rt)
        with anyio.fail_after(60):  # the run is cancelled as the first send fails, not left waiting for its hour
            await Server(0)(app, {"model": "a", "stream": True, "messages": [{"role": "user", "content": "x"}]},
                            "/v1/chat/completions")
        await anyio.sleep(1)
        assert calls in ([], ["started", "cancelled"]), calls
        assert rt.stats().tasks == tasks and rt.stats().busy == 0


@pytest.mark.parametrize("fail_at", [0, 1, 2, 4])
async def test_an_agui_send_that_raises_ends_the_request_quietly(fail_at: int) -> None:
    calls: list[str] = []
    async with Runtime() as rt:
        tasks = rt.stats().tasks
        app = agui_app(Agent(slow_after_first(calls), name="a"), runtime=rt)
        server = Server(fail_at)
        await server(app, {"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "hi"}]},
                     "/")
        assert server.refused == 1
        await anyio.sleep(1)
        assert rt.stats().tasks == tasks and rt.stats().busy == 0
        # the thread is free: the next post runs (its answer waits an hour, and its client leaves at once)
        with anyio.fail_after(60):
            await Server(0)(app, {"threadId": "t", "runId": "r2", "messages": [
                {"id": "m2", "role": "user", "content": "again"}]}, "/")
