"""The session handle: making one, prompts, order within a session, concurrency across, cancellation.

Virtual time on both backends (MemoryStore: no threads, no sockets).
"""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.events import InMemoryRecorder, SessionActivated, SessionCommitted, SessionEvent
from agentactors.messages import LLMRequest, Message, ToolCall
from agentactors.parts import Image, Part, Text
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import AgentSession, MemoryStore, open_session
from agentactors.tools.registry import ToolContext, tool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x01" * 16


def _users(request: LLMRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(_users(request))


# --- making one ------------------------------------------------------------------------------------


async def test_a_session_is_made_by_the_runtime_or_the_agent() -> None:
    agent = Agent(ScriptedProvider(echo_model))
    async with Runtime() as rt:
        a = rt.session(agent, "k")
        b = agent.session("k", runtime=rt)
        assert isinstance(a, AgentSession) and isinstance(b, AgentSession)
        assert a.key == "k" and a.agent is agent and a.runtime is rt and a.idle_timeout == 60.0
        assert a.store is b.store  # the runtime's default store
        await a.send("one")
        assert b.history == a.history and b.active  # two handles, one session
        assert "'k' active version=1" in repr(a)


async def test_bad_arguments_are_refused() -> None:
    agent = Agent(ScriptedProvider(echo_model))
    async with Runtime() as rt:
        with pytest.raises(TypeError, match="key is a str"):
            rt.session(agent, 3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="must not be empty"):
            rt.session(agent, "")
        with pytest.raises(ValueError, match="idle_timeout must be > 0"):
            rt.session(agent, "k", idle_timeout=0)
        with pytest.raises(ValueError, match="idle_timeout must be > 0"):
            rt.session(agent, "k", idle_timeout=math.nan)
        with pytest.raises(TypeError, match="idle_timeout is a number"):
            rt.session(agent, "k", idle_timeout="60")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="not a SessionStore"):
            rt.session(agent, "k", store=object())
        session = rt.session(agent, "k")
        with pytest.raises(ValueError, match="needs a prompt"):
            await session.send([])
        with pytest.raises(ValueError, match="needs a prompt"):  # as agent.run("") is refused
            await session.send("")
        with pytest.raises(TypeError, match="not int"):
            await session.send(3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="Message objects"):
            await session.send([Message.user("a"), "b"])  # type: ignore[arg-type]
        assert not session.active  # a refused prompt activates nothing
    with pytest.raises(RuntimeError, match="not running"):
        open_session(agent, "k", runtime=rt, store=None, idle_timeout=1.0)


async def test_every_prompt_form_is_a_turn() -> None:
    provider = ScriptedProvider(echo_model)
    async with Runtime() as rt:
        session = rt.session(Agent(provider), "k")
        await session.send("text")
        await session.send(Message.user("message"))
        await session.send([Message.user("two"), Message.assistant("noted"), Message.user("messages")])
        parts: list[Part] = [Text("parts"), Image(data=PNG)]
        await session.send(parts)
        await session.send(Text("a part"))
        assert _users(provider.requests[-1]) == [
            "text", "message", "two", "messages", "parts", "a part"
        ]
        stored = await session.store.load("k")
        assert stored is not None and stored.messages == session.history
        assert stored.messages[-4].media == (Image(data=PNG),)


# --- order and concurrency -------------------------------------------------------------------------


async def test_turns_of_one_session_run_one_at_a_time_in_order() -> None:
    running = 0
    most = 0

    async def model(request: LLMRequest) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await anyio.sleep(1)
        running -= 1
        return echo_model(request)

    results: dict[int, Any] = {}
    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(model)), "k")

        async def send(i: int) -> None:
            results[i] = await session.send(f"m{i}")

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(send, i)
                await anyio.lowlevel.checkpoint()  # start them in this order
        assert most == 1
        # Each turn saw every turn before it, in the order they were sent.
        for i in range(6):
            assert results[i].content == "seen: " + " | ".join(f"m{j}" for j in range(i + 1))
        assert session.version == 6 and len(session.history) == 12


async def test_turns_of_different_sessions_run_concurrently() -> None:
    arrived = {"a": anyio.Event(), "b": anyio.Event()}

    async def model(request: LLMRequest) -> str:
        me = _users(request)[-1]
        other = "b" if me == "a" else "a"
        arrived[me].set()
        await arrived[other].wait()  # deadlocks unless both turns run at once
        return f"{me} met {other}"

    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(model))
        results: dict[str, str] = {}

        async def send(key: str) -> None:
            results[key] = (await rt.session(agent, key).send(key)).content

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(send, "a")
                tg.start_soon(send, "b")
        assert results == {"a": "a met b", "b": "b met a"}


async def test_a_cancelled_caller_cancels_its_queued_turn_too() -> None:
    gate = anyio.Event()
    seen: list[str] = []

    async def model(request: LLMRequest) -> str:
        seen.append(_users(request)[-1])
        if seen[-1] == "first":
            await gate.wait()
        return echo_model(request)

    async with Runtime() as rt:
        session = rt.session(Agent(ScriptedProvider(model)), "k")
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.send, "first")
            await anyio.sleep(0.1)
            with anyio.move_on_after(1):
                await session.send("queued")  # waits behind "first", then gives up
            gate.set()
        assert seen == ["first"]  # the abandoned turn never ran
        assert [m.content for m in session.history if m.role == "user"] == ["first"]


# --- the conversation, not the agent ---------------------------------------------------------------


async def test_the_session_is_the_conversation_each_turn_runs_its_handles_agent() -> None:
    triage = Agent(ScriptedProvider("triage here"), name="triage")
    billing = Agent(ScriptedProvider(echo_model), name="billing")
    async with Runtime() as rt:
        await rt.session(triage, "k").send("help")
        result = await rt.session(billing, "k").send("my bill")
        assert result.content == "seen: help | my bill"
        other = MemoryStore()
        assert (await rt.session(billing, "k", store=other).send("x")).content == "seen: x"  # another store


async def test_deps_reach_tools_and_are_never_stored() -> None:
    @tool
    async def whoami(ctx: ToolContext) -> str:
        """Who is asking."""
        return f"user {ctx.deps['user']}"

    secret = {"user": "alice", "token": "sk-never-stored"}
    provider = ScriptedProvider([ToolCall("c1", "whoami", {}), "done"])
    async with Runtime() as rt:
        session = rt.session(Agent(provider, tools=[whoami]), "k")
        await session.send("who?", deps=secret)
        assert any(m.content == "user alice" for m in session.history)
        stored = await session.store.load("k")
        assert stored is not None and "sk-never-stored" not in repr(stored)


async def test_session_events_are_typed() -> None:
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        await rt.session(Agent(ScriptedProvider(echo_model)), "k").send("hi")
    kinds = [type(e) for e in rec.events if isinstance(e, SessionEvent)]
    assert kinds[:2] == [SessionActivated, SessionCommitted]
    assert all(e.type.startswith("session.") for e in rec.events if isinstance(e, SessionEvent))
