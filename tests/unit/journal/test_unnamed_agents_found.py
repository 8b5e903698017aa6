"""An unnamed agent's run is found by an unnamed agent given to ``fork`` and ``replay`` (``agents=``).

``agents=[...]`` is checked to accept unnamed agents ("found for an unnamed agent's run", ``checked_agents``), and
``rt.recover()`` finds one (its agents by name, ``None`` a name like any other); ``fork`` and ``replay`` passed them
over: ``fork(path, run_id, 1, agents=[agent])`` of an unnamed agent's run said no agent was given, and ``replay``
shaped its requests by an agent made from the recording instead of the one given.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, Runtime, fork, replay
from agentactors.journal import ForkAgentMissingError
from agentactors.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio


async def recorded(path: Path) -> str:
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]):
            result = await Agent(ScriptedProvider(["recorded answer"]), system="You answer.").run("question")
    assert result.ok and result.run_id is not None
    return result.run_id


async def test_fork_of_an_unnamed_agents_run_takes_the_unnamed_agent_given(tmp_path: Path) -> None:
    run_id = await recorded(tmp_path / "events.jsonl")
    named = Agent(ScriptedProvider(["the named one"]), name="shop")
    unnamed = Agent(ScriptedProvider(["forked answer"]), system="You answer again.")
    forked = await fork(tmp_path / "events.jsonl", run_id, 1, agents=[named, unnamed])
    assert forked.content == "forked answer" and forked.forked_from == run_id
    with pytest.raises(ForkAgentMissingError, match="agent named None"):  # a named agent is not the unnamed one
        await fork(tmp_path / "events.jsonl", run_id, 1, agents=[named])


async def test_an_unnamed_agent_bound_to_the_runtime_is_no_guess_for_an_unnamed_run(tmp_path: Path) -> None:
    # Any number of unnamed agents may be bound to a runtime: taking one would be a guess.
    run_id = await recorded(tmp_path / "events.jsonl")
    async with Runtime() as rt:
        bound = Agent(ScriptedProvider(["bound answer"]), system="OTHER").bind(rt)  # held weakly: kept here
        with pytest.raises(ForkAgentMissingError):
            await fork(tmp_path / "events.jsonl", run_id, 1, runtime=rt)
        events = InMemoryRecorder()
        await replay(tmp_path / "events.jsonl", run_id, runtime=rt, recorders=[events])
        (request,) = [e.request for e in events.events if e.type == "llm.request"]
        assert request.messages[0].content == "You answer."  # the recording's own agent, not the bound one
        assert bound.name is None


async def test_replay_of_an_unnamed_agents_run_runs_as_the_unnamed_agent_given(tmp_path: Path) -> None:
    run_id = await recorded(tmp_path / "events.jsonl")
    unnamed = Agent(ScriptedProvider(["never asked"]), system="You answer, replayed.")
    events = InMemoryRecorder()
    replayed = await replay(tmp_path / "events.jsonl", run_id, agents=[unnamed], recorders=[events])
    assert replayed.content == "recorded answer"
    (request,) = [e.request for e in events.events if e.type == "llm.request"]
    assert request.messages[0].content == "You answer, replayed."  # the agent given shaped the request
