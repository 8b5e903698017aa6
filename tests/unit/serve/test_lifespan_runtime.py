"""An app's ``runtime=`` and the ASGI lifespan: a runtime nobody entered is run for the app's lifetime, a closed
one fails the startup, a running one is left to its owner — driven through the lifespan protocol itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.serve import agui_app, openai_app

pytestmark = pytest.mark.anyio

AGENT = Agent(ScriptedProvider(lambda request: "hi"), name="echo")
APPS: list[Callable[..., Any]] = [
    lambda rt: openai_app({"echo": AGENT}, runtime=rt),
    lambda rt: agui_app(AGENT, runtime=rt),
]


@asynccontextmanager
async def started(app: Any) -> AsyncIterator[tuple[list[dict[str, Any]], Callable[[], Any]]]:
    """The app's lifespan running in a task: yields what it sent so far, and ``stop()`` (send shutdown, wait)."""
    to_app_send, to_app = anyio.create_memory_object_stream[dict[str, Any]](4)
    sent: list[dict[str, Any]] = []
    done = anyio.Event()

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def lifespan() -> None:
        try:
            await app({"type": "lifespan", "asgi": {"version": "3.0"}}, to_app.receive, send)
        finally:
            done.set()

    async def stop() -> None:
        await to_app_send.send({"type": "lifespan.shutdown"})
        with anyio.fail_after(10):
            await done.wait()

    async with to_app_send, to_app, anyio.create_task_group() as tg:
        tg.start_soon(lifespan)
        await to_app_send.send({"type": "lifespan.startup"})
        with anyio.fail_after(10):
            while not sent:
                await anyio.lowlevel.checkpoint()
        yield sent, stop
        if not done.is_set():
            await stop()


@pytest.mark.parametrize("make", APPS, ids=["openai", "agui"])
async def test_a_runtime_nobody_entered_is_run_for_the_apps_lifetime(make: Callable[..., Any]) -> None:
    rt = Runtime()
    async with started(make(rt)) as (sent, stop):
        assert sent == [{"type": "lifespan.startup.complete"}]
        assert rt.running  # entered by the app: its requests' runs have a runtime to run in
        assert (await AGENT.run("hello", runtime=rt)).content == "hi"
        await stop()
    assert sent[-1] == {"type": "lifespan.shutdown.complete"} and rt.closed  # and closed with the app


@pytest.mark.parametrize("make", APPS, ids=["openai", "agui"])
async def test_a_running_runtime_is_left_to_whoever_entered_it(make: Callable[..., Any]) -> None:
    async with Runtime() as rt:
        async with started(make(rt)) as (sent, stop):
            assert sent == [{"type": "lifespan.startup.complete"}]
            await stop()
        assert sent[-1] == {"type": "lifespan.shutdown.complete"} and rt.running


@pytest.mark.parametrize("make", APPS, ids=["openai", "agui"])
async def test_a_closed_runtime_fails_the_startup_saying_so(make: Callable[..., Any]) -> None:
    async with Runtime() as rt:
        pass
    async with started(make(rt)) as (sent, _):
        pass
    assert sent[0]["type"] == "lifespan.startup.failed" and "has closed" in sent[0]["message"]
