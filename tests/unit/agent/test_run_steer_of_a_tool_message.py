"""A steer cannot be a tool message: refused when it is sent, not a step later by the vendor.

``run.steer(Message.tool(...))`` used to be accepted and put into the conversation as it was: a tool result
no call asked for is a conversation every vendor refuses, so the run failed on its next model call, far from
the cause.  The same for ``session.steer``.  Virtual time on both backends (no I/O).
"""

from __future__ import annotations

import anyio
import pytest

from agentactors import Agent, Runtime
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

TOOL_RESULTS = [Message.tool("c9", "42")]


class _Held:
    """A model whose first answer waits for ``go_on``; it records the roles of each request."""

    def __init__(self) -> None:
        self.writing = anyio.Event()
        self.go_on = anyio.Event()
        self.roles: list[list[str]] = []

    async def __call__(self, request: LLMRequest) -> str:
        self.roles.append([m.role for m in request.messages])
        if len(self.roles) == 1:
            self.writing.set()
            await self.go_on.wait()
        return "answer"


async def test_a_steer_that_is_a_tool_message_is_refused_and_the_run_goes_on() -> None:
    model = _Held()
    with anyio.fail_after(10):
        async with Runtime(), Agent(ScriptedProvider(model)).stream("q") as run:
            await model.writing.wait()
            for message in TOOL_RESULTS:
                with pytest.raises(ValueError, match="tool message"):
                    await run.steer(message)
            await run.steer(Message.user("also Oslo"))
            model.go_on.set()
            result = await run.wait()
    assert result.ok
    assert model.roles == [["user"], ["user", "assistant", "user"]], "only the user steer reached the model"


async def test_a_session_steer_that_is_not_a_user_message_is_refused() -> None:
    model = _Held()
    with anyio.fail_after(10):
        async with Runtime() as rt:
            session = rt.session(Agent(ScriptedProvider(model)), "k")
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.send, "q")
                await model.writing.wait()
                for message in TOOL_RESULTS:
                    with pytest.raises(ValueError, match="tool message"):
                        await session.steer(message)
                model.go_on.set()
            assert [m.role for m in session.history] == ["user", "assistant"]
