"""An empty user message posted to an AG-UI thread whose run is going is nothing new: never a steer.

A run refuses an empty steer (it says nothing, yet could cost a model call: docs/loop.md); handed on as one, it failed
the run of the request that owned the thread ("the run failed in the server (ValueError)") — another client's
request, failed by this one's empty box.  It is now left out: the request that carried it answers that there is
no new user message, and the thread's run goes on.  (Found by a review of the change that refused empty steers.)
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.providers.scripted import ScriptedProvider
from agentactors.serve import agui_app
from agentactors.sessions import MemoryStore, SessionRecord
from tests.unit.serve.test_agui_live import post

pytestmark = pytest.mark.anyio


class SlowLoad(MemoryStore):
    """A store whose first load waits for :attr:`gate`: the thread's run is started and not yet running."""

    def __init__(self) -> None:
        super().__init__()
        self.loading = anyio.Event()
        self.gate = anyio.Event()

    async def load(self, key: str) -> SessionRecord | None:
        if not self.loading.is_set():
            self.loading.set()
            await self.gate.wait()
        return await super().load(key)


@pytest.mark.virtual_time
async def test_an_empty_user_message_does_not_fail_the_threads_run() -> None:
    agent = Agent(ScriptedProvider(lambda r: "answer"), name="chat")
    store = SlowLoad()
    answers: dict[str, list[dict[str, Any]]] = {}

    async def request(run_id: str, messages: list[dict[str, Any]]) -> None:
        answers[run_id] = await post(app, {"threadId": "t", "runId": run_id, "messages": messages})

    async with Runtime() as rt:
        app = agui_app(agent, runtime=rt, sessions=True, store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(request, "run-1", [{"id": "a", "role": "user", "content": "Bergen?"}])
            await store.loading.wait()
            tg.start_soon(request, "run-2", [{"id": "a", "role": "user", "content": "Bergen?"},
                                             {"id": "b", "role": "user", "content": ""}])
            await anyio.sleep(1)
            store.gate.set()
    assert answers["run-1"][-1]["type"] == "RUN_FINISHED", answers["run-1"]
    last = answers["run-2"][-1]
    assert last["type"] == "RUN_ERROR" and "no new user message" in last["message"], last
