"""One nesting limit for every child run, however it starts: a plain tool that awaits ``agent.run`` of its own
agent is refused past ``lineage.MAX_DEPTH`` (the calling tool's result is ``denied`` with the reason, never a
``RecursionError``), and an outer cancel scope ends the whole tree within a bounded time.  Both backends."""

from __future__ import annotations

import itertools
import time
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, LLMRequest, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.loop import lineage

pytestmark = pytest.mark.anyio

_ids = itertools.count()


def _call_once(request: LLMRequest) -> Any:
    """Call ``again`` once per run, then answer with what the tool said."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"answer after: {last.content[:200]}"
    return LLMResponse("", tool_calls=(ToolCall(f"c{next(_ids)}", "again", {}),))


def _call_forever(request: LLMRequest) -> Any:
    """Always call ``again`` (two calls at once): a tree that grows as fast as it can."""
    return LLMResponse(
        "", tool_calls=(ToolCall(f"c{next(_ids)}", "again", {}), ToolCall(f"c{next(_ids)}", "again", {}))
    )


def _self_calling(script: Any, **options: Any) -> Agent[str]:
    holder: list[Agent[str]] = []

    @tool
    async def again() -> str:
        """Ask the same agent again."""
        result = await holder[0].run("again")
        return result.content

    agent: Agent[str] = Agent(ScriptedProvider(script), name="loop", tools=[again], **options)
    holder.append(agent)
    return agent


async def test_a_tool_that_runs_its_own_agent_is_denied_past_the_nesting_limit() -> None:
    recorder = InMemoryRecorder()
    agent = _self_calling(_call_once)
    async with Runtime(recorders=[recorder]):
        result = await agent.run("go")
    assert result.ok
    denied = [e for e in recorder.events if e.type == "tools.finished" and e.data.get("status") == "denied"]
    assert len(denied) == 1
    started = [e for e in recorder.events if e.type == "run.started"]
    assert len(started) == lineage.MAX_DEPTH + 1  # depths 0..MAX_DEPTH ran; the next one never started
    tool_texts = [m.content for r in _tree(result) for m in r.messages if m.role == "tool"]
    assert any(f"runs nest at most {lineage.MAX_DEPTH} deep" in text for text in tool_texts)
    assert not any("RecursionError" in text for text in tool_texts)


def _tree(result: Any) -> list[Any]:
    out = [result]
    for child in result.children:
        out.extend(_tree(child))
    return out


async def test_an_outer_cancel_scope_ends_a_self_calling_tree_in_bounded_time() -> None:
    agent = _self_calling(_call_forever, max_steps=50)
    async with Runtime():
        started = time.monotonic()
        with anyio.move_on_after(2) as scope:
            await agent.run("go")
        ended = time.monotonic() - started
    assert scope.cancelled_caught
    assert ended < 10, f"the tree ended {ended:.1f} s after a 2 s cancel scope began"


def test_the_limit_is_a_number_the_docs_state() -> None:
    assert lineage.MAX_DEPTH == 8
