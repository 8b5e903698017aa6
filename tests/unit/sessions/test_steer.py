"""``session.steer``: a user message for the turn running now, taken by its live run at the next step boundary.

Virtual time on both backends (MemoryStore: no threads, no sockets).
"""

from __future__ import annotations

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import RunNotFoundError
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools import tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _users(request: LLMRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


class _Gated:
    """A model whose first answer waits for ``gate``: the turn is running while the test steers it."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.gate = anyio.Event()
        self.seen: list[list[str]] = []

    async def __call__(self, request: LLMRequest) -> str:
        self.seen.append(_users(request))
        if len(self.seen) == 1:
            self.started.set()
            await self.gate.wait()
            return "first answer"
        return "answer with " + " + ".join(_users(request))


async def test_a_steer_reaches_the_running_turn_once_and_is_committed_with_it() -> None:
    model = _Gated()
    agent = Agent(ScriptedProvider(model), name="a")
    async with Runtime() as rt:
        session = rt.session(agent, "k")
        results: list[RunResult[str]] = []

        async def turn() -> None:
            results.append(await session.send("hi"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await model.started.wait()
            await session.steer("also Oslo")
            await session.steer(Message.user("and Bergen"))
            model.gate.set()
        (result,) = results
        assert result.ok and result.content == "answer with hi + also Oslo + and Bergen"
        assert model.seen == [["hi"], ["hi", "also Oslo", "and Bergen"]], "each steer read once, in order"
        assert [(m.role, m.content) for m in session.history] == [
            ("user", "hi"), ("assistant", "first answer"), ("user", "also Oslo"), ("user", "and Bergen"),
            ("assistant", "answer with hi + also Oslo + and Bergen"),
        ], "the steers are part of the committed turn"
        with pytest.raises(RunNotFoundError, match="no turn running"):
            await session.steer("too late")
        assert len(session.history) == 5, "a refused steer changes nothing"


async def test_a_session_with_no_turn_running_refuses_a_steer() -> None:
    agent = Agent(ScriptedProvider(["never"]), name="a")
    async with Runtime() as rt:
        session = rt.session(agent, "idle")
        with pytest.raises(RunNotFoundError):
            await session.steer("hello?")
        with pytest.raises(TypeError):
            await session.steer(42)  # type: ignore[arg-type]
        assert session.history == ()


async def test_a_steer_reaches_only_its_own_sessions_turn() -> None:
    model = _Gated()
    agent = Agent(ScriptedProvider(model), name="a")
    async with Runtime() as rt:
        busy, other = rt.session(agent, "busy"), rt.session(agent, "other")
        async with anyio.create_task_group() as tg:
            tg.start_soon(busy.send, "hi")
            await model.started.wait()
            with pytest.raises(RunNotFoundError):
                await other.steer("not mine")
            model.gate.set()
        assert model.seen == [["hi"]], "the other session's steer reached nobody"


async def test_a_steer_reaches_a_resolved_turn_that_is_running() -> None:
    # session.resolve's resumed run was not listed among the session's live turns: steer said 'no turn running'.
    started, gate = anyio.Event(), anyio.Event()
    seen: list[list[str]] = []

    @tool(requires_approval=True)
    async def refund(amount: int) -> str:
        """Refund an amount."""
        return f"refunded {amount}"

    async def model(request: LLMRequest) -> object:
        seen.append(_users(request))
        if not any(m.role == "tool" for m in request.messages):
            return [ToolCall("r1", "refund", {"amount": 5})]
        if len(seen) == 2:  # the resumed run's first model call
            started.set()
            await gate.wait()
            return "refunded"
        return "refunded, and " + _users(request)[-1]

    agent = Agent(ScriptedProvider(model), name="a", tools=[refund])
    async with Runtime() as rt:
        session = rt.session(agent, "k")
        paused = await session.send("refund 5")
        assert paused.paused
        results: list[RunResult[str]] = []

        async def resolve() -> None:
            results.append(await session.resolve({"r1": True}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(resolve)
            await started.wait()
            await session.steer("note: it arrived broken")
            gate.set()
        (result,) = results
        assert result.ok and result.content == "refunded, and note: it arrived broken"
        assert ("user", "note: it arrived broken") in [(m.role, m.content) for m in session.history]
        with pytest.raises(RunNotFoundError, match="no turn running"):
            await session.steer("too late")
