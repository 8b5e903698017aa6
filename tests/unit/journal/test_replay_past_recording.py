"""A replay from a journal asks no model past its recording, whichever way the run went past it (docs/durability.md,
"Replay"): the three cases the generated recorded runs found from a JSONL record
(``tests/unit/test_recorded_runs_generated.py``), from SQLite and PostgreSQL journals.

* after a handoff, a call past the recording is refused (``ReplayDivergedError``), never the target's own provider
  asked — the replay gave its ReplayProvider to the replayed agent only;
* a steer taken before a model call that failed is journaled with the run's last response (``"steers_after"``), so
  the replay goes on past the answer before it and says it diverged — it ended ``ok`` on that answer;
* a run interrupted after a think-only step replays interrupted there — it asked the model again.

Real files, threads and a server: the real clock, generous bounds.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from agentactors import Agent, LLMResponse, Runtime, ToolCall
from agentactors.errors import ProviderError, RunInterruptedError
from agentactors.journal import ReplayDivergedError, replay
from agentactors.messages import Message
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import Counting, journal_on, sql, vendor_failure
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio


async def _streamed(db: str, agent: Agent[Any], control: str) -> Any:
    """``agent`` streamed in a journaled runtime, ``control`` (``steer`` or ``interrupt``) sent during step 1's
    model call (taken at the boundary after it)."""
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        with anyio.fail_after(30):
            async with agent.stream("go", runtime=rt) as run:
                async for event in run:
                    if event.type == "llm.request" and event.step == 1:
                        if control == "steer":
                            await run.steer("also this")
                        else:
                            await run.interrupt("enough")
                return await run.wait()


async def test_a_replay_after_a_handoff_never_asks_the_targets_provider(db: str) -> None:
    model = Counting([LLMResponse(tool_calls=[ToolCall("h1", "transfer_to_target", {})]), vendor_failure(), "late"])
    provider = ScriptedProvider(model)
    agent = Agent(provider, name="main", handoffs=[Agent(provider, name="target")], max_steps=3)
    async with journal_on(db) as journal, Runtime(journal=journal) as rt:
        with anyio.fail_after(30):
            live = await agent.run("go", runtime=rt)
    assert live.generation_failed and live.agent == "target" and model.calls == 2
    async with journal_on(db) as journal:
        with anyio.fail_after(30), pytest.raises(ReplayDivergedError):
            await replay(journal, live.run_id or "", agent=agent)
    assert model.calls == 2


async def test_a_steer_before_a_failed_call_is_journaled_and_the_replay_says_it_diverged(db: str) -> None:
    model = Counting([LLMResponse("Hello."), vendor_failure()])
    agent = Agent(ScriptedProvider(model, latency=0.1), name="main", max_steps=2)
    live = await _streamed(db, agent, "steer")
    assert live.steps == 2 and isinstance(live.error, ProviderError) and model.calls == 2
    # Kept with the run's last response, in its document: the run went on past that answer for it.
    [(doc,)] = sql(db, "SELECT response FROM agentactors_steps WHERE run_id = ?", live.run_id)
    assert [m["content"] for m in json.loads(doc)["steers_after"]] == ["also this"]
    async with journal_on(db) as journal:
        recorded = await journal.load_run(live.run_id or "")
        assert recorded.steers_after == (Message("user", "also this"),)
        assert recorded.steps[-1].steers == ()
        with anyio.fail_after(30), pytest.raises(ReplayDivergedError):
            await replay(journal, live.run_id or "", agent=agent)
    assert model.calls == 2


async def test_a_run_interrupted_after_a_think_only_step_replays_interrupted(db: str) -> None:
    model = Counting([LLMResponse(""), LLMResponse("Final.")])
    agent = Agent(ScriptedProvider(model, latency=0.1), name="main", max_steps=2)
    live = await _streamed(db, agent, "interrupt")
    assert live.steps == 1 and isinstance(live.error, RunInterruptedError) and model.calls == 1
    async with journal_on(db) as journal:
        with anyio.fail_after(30):
            again = await replay(journal, live.run_id or "", agent=agent)
    assert again.steps == 1 and isinstance(again.error, RunInterruptedError) and again.error.reason == "enough"
    assert again.messages == live.messages and model.calls == 1
