"""``TurnAgent``: a session's agent with a hook around its calls — what the session asked reaches the agent
unchanged, nested hooks act outermost first, and a resume goes through the hook only when asked to."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.loop.result import RunResult
from agentactors.messages import Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions.turns import TurnAgent, TurnCall

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Recorded:
    """An agent that records each call: which method, its arguments and keywords (a real run answers)."""

    def __init__(self, agent: Agent[Any], log: list[str]) -> None:
        self.agent = agent
        self.log = log
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    @property
    def name(self) -> str | None:
        return "recorded"

    async def run(self, prompt: Any, **options: Any) -> RunResult[Any]:
        self.log.append("run")
        self.calls.append(("run", (prompt,), options))
        result: RunResult[Any] = await self.agent.run(prompt, **options)
        return result

    async def resume(self, state: Any, decisions: Any, **options: Any) -> RunResult[Any]:
        self.log.append("resume")
        self.calls.append(("resume", (state, decisions), options))
        return await self.agent.run("resumed", runtime=options["runtime"])


def hook(label: str, log: list[str], seen: list[TurnCall]) -> Any:
    async def around(call: TurnCall) -> RunResult[Any]:
        seen.append(call)
        log.append(f"{label} in")
        try:
            return await call.proceed()
        finally:
            log.append(f"{label} out")

    return around


async def test_a_turns_run_reaches_the_agent_unchanged_through_nested_hooks_outermost_first() -> None:
    log: list[str] = []
    seen: list[TurnCall] = []
    async with Runtime() as rt:
        inner = Recorded(Agent(ScriptedProvider(["hello"]), name="a"), log)
        agent = TurnAgent(TurnAgent(inner, hook("inner", log, seen)), hook("outer", log, seen))
        options = {"runtime": rt, "deps": object(), "settings": None, "deadline": 30.0, "priority": 2}
        prompt = (Message.user("before"), Message.user("now"))
        result = await agent.run(prompt, **options)
    assert result.ok and result.content == "hello", "the agent's own result comes back"
    assert log == ["outer in", "inner in", "run", "inner out", "outer out"]
    assert inner.calls == [("run", (prompt,), options)], "as the session asked, nothing added"
    assert [c.prompt for c in seen] == [prompt] * 2 and not any(c.resuming for c in seen)
    assert agent.name == "recorded"


async def test_a_resume_goes_through_the_hook_only_when_the_wrapper_says_so() -> None:
    log: list[str] = []
    seen: list[TurnCall] = []
    async with Runtime() as rt:
        inner = Recorded(Agent(ScriptedProvider(["one", "two"]), name="a"), log)
        await TurnAgent(inner, hook("plain", log, seen)).resume("state", {"c1": True}, runtime=rt, deps=None)
        assert log == ["resume"] and seen == [], "a run-only hook: the resume goes straight to the agent"
        log.clear()
        await TurnAgent(inner, hook("both", log, seen), resumes=True).resume("state", {"c1": True}, runtime=rt)
    assert log == ["both in", "resume", "both out"]
    (call,) = seen
    assert call.resuming and call.prompt is None and call.args == ("state", {"c1": True})
    assert inner.calls[-1] == ("resume", ("state", {"c1": True}), {"runtime": rt})
