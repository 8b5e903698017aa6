"""fork(): steps before at_step from the recording, the rest live; the recording is never changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentactors import Agent, InMemoryRecorder, ModelSettings, Runtime, ToolCall, fork, replay
from agentactors.journal import ForkAgentMissingError, StepOutOfRangeError
from agentactors.providers.scripted import ScriptedProvider

from .conftest import Ledger, record

pytestmark = pytest.mark.anyio


async def test_fork_reuses_the_steps_before_and_calls_the_new_provider_for_the_rest(
    tmp_path: Path, ledger: Ledger
) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    before = rec.path.read_bytes()
    done = list(ledger.charges)
    live = Ledger()
    provider = ScriptedProvider([[ToolCall("c9", "charge", {"cents": 100})], "Charged 100 instead."])
    events = InMemoryRecorder()
    forked = await fork(
        rec.path, rec.result.run_id or "", 2,
        agent=Agent(provider, tools=live.tools(), name="shop"), recorders=[events],
    )
    assert provider.calls == 2  # steps 2 and 3, live; step 1 was the recording's
    assert ledger.charges == done  # the recorded lookup was not run again
    assert live.charges == [(f"{forked.run_id}:c9", 100)]  # only the forked step's tool ran
    assert forked.content == "Charged 100 instead." and forked.steps == 3
    assert forked.forked_from == rec.result.run_id
    assert forked.messages[:3] == rec.result.messages[:3]  # the input, step 1's call and its result
    assert [(e.forked_from, e.at_step) for e in events.events if e.type == "run.forked"] == [(rec.result.run_id, 2)]
    assert provider.requests[0].messages[-1].content == "sunny in Lisbon"  # the live step read the reused result
    assert rec.path.read_bytes() == before


async def test_fork_at_the_first_step_is_all_live_and_takes_settings(tmp_path: Path, ledger: Ledger) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    provider = ScriptedProvider(["No charge today."])
    events = InMemoryRecorder()
    forked = await fork(
        rec.path, rec.result.run_id or "", 1,
        agent=Agent(provider, name="shop"), settings=ModelSettings(temperature=0.0), recorders=[events],
    )
    assert provider.calls == 1 and provider.requests[0].temperature == 0.0
    assert forked.content == "No charge today." and forked.steps == 1 and forked.forked_from == rec.result.run_id
    # Nothing reused, and still the run says what it was forked from (before its first, live, model call).
    assert [(e.forked_from, e.at_step) for e in events.events if e.type == "run.forked"] == [(rec.result.run_id, 1)]


async def test_a_step_past_the_end_is_a_typed_error(tmp_path: Path, ledger: Ledger) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    agent = Agent(ScriptedProvider(["x"]))
    for at in (0, 4, -1):
        with pytest.raises(StepOutOfRangeError, match=r"1 … 3") as info:
            await fork(rec.path, rec.result.run_id or "", at, agent=agent)
        assert (info.value.at_step, info.value.steps) == (at, 3)
    with pytest.raises(ValueError):  # also a ValueError
        await fork(rec.path, rec.result.run_id or "", 9, agent=agent)
    with pytest.raises(TypeError, match="needs the agent"):
        await fork(rec.path, rec.result.run_id or "", 2)


async def test_fork_without_an_agent_takes_the_recorded_one_by_name_or_says_what_it_needs(
    tmp_path: Path, ledger: Ledger
) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    run_id = rec.result.run_id or ""
    live = Ledger()
    provider = ScriptedProvider(["Not charging after all."])
    async with Runtime() as rt:
        shop = Agent(provider, tools=live.tools(), name="shop", system="You shop.").bind(rt)
        other = Agent(ScriptedProvider(["wrong agent"]), name="other").bind(rt)
        forked = await fork(rec.path, run_id, 2, runtime=rt, settings=ModelSettings(temperature=0.5))
    assert shop.name == "shop" and other.name == "other"
    assert forked.content == "Not charging after all." and forked.forked_from == run_id
    assert provider.calls == 1 and provider.requests[0].temperature == 0.5  # the recorded agent, new settings
    assert live.charges == [] and forked.messages[:3] == rec.result.messages[:3]
    by_keyword = await fork(rec.path, run_id, 3, agents=[Agent(ScriptedProvider(["kw"]), name="shop")])
    assert by_keyword.content == "kw"
    with pytest.raises(ForkAgentMissingError, match="agent named 'shop'") as info:
        await fork(rec.path, run_id, 2, agents=[Agent(ScriptedProvider(["x"]), name="someone-else")])
    assert info.value.agent == "shop" and isinstance(info.value, TypeError)


async def test_replay_without_an_agent_takes_the_recorded_one_by_name(tmp_path: Path, ledger: Ledger) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    events = InMemoryRecorder()
    provider = ScriptedProvider(["never asked"])
    named = Agent(provider, tools=Ledger().tools(), name="shop", system="You shop.", recorders=[events])
    again = await replay(rec.path, rec.result.run_id or "", agents=[named])
    assert provider.calls == 0 and again.messages == rec.result.messages
    requests = [e.request for e in events.events if e.type == "llm.request"]
    assert [t.name for t in requests[0].tools] == ["charge", "lookup"]  # the named agent's tools shaped them
