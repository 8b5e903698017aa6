"""``explain`` of a run served by a pool or a hedge: its failovers and hedges are told.

``explain`` read only ``fallback.moved``: a pool that moved off a failing member said "failovers: none", and
its step's path named only the member that served; a hedge sent and won was nowhere.  Now ``pool.moved``
is read as ``fallback.moved`` (the failovers line, the step's path, the timeline), ``pool.skipped`` and
``fallback.skipped`` are timeline lines, and so are ``hedge.sent`` and ``hedge.won``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    LLMRequest,
    LLMResponse,
    ProviderActor,
    ProviderError,
    Runtime,
    ScriptedProvider,
    StopReason,
    Usage,
)
from agentactors.events import HedgeSkipped, InMemoryRecorder
from agentactors.explain import Explanation, explain
from agentactors.resilience import with_hedge, with_pool


def _down(request: LLMRequest) -> LLMResponse:
    raise ProviderError("down", provider="a", kind="transient", status=503)


def _answer(text: str) -> Any:
    return lambda request: LLMResponse(text, (), StopReason.end_turn, Usage(1, 1))


class _Slow:
    """A provider that answers after a second: a hedge is sent before it does."""

    name = "slow"
    default_model = "m"
    carries_tools = True

    async def complete(self, request: LLMRequest) -> LLMResponse:
        await anyio.sleep(1)
        return LLMResponse("slow", (), StopReason.end_turn, Usage(1, 1))

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_pool_failover_is_told_as_a_failover() -> None:
    pool = with_pool(ScriptedProvider(_down, name="a", model="m"), ScriptedProvider(_answer("ok"), name="b", model="m"))
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        result = await Agent(pool, name="pooled").run("x")
    assert result.content == "ok"
    explanation = explain(result, recorder.events)
    assert explanation.failovers == ("a → b (transient)",)
    (path,) = explanation.path
    assert path.tried == ("a", "b") and path.failovers == ("a → b (transient)",) and path.served_by == "b"
    assert any("failover a → b (reason: transient, ProviderError HTTP 503 transient)" in line
               for line in explanation.timeline)


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_hedge_sent_and_won_is_on_the_timeline() -> None:
    hedged = with_hedge(_Slow(), after=0.05, max_extra=1.0, to=ScriptedProvider(_answer("fast"), name="h2", model="m"))
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        result = await Agent(hedged, name="hedged").run("y")
    assert result.content == "fast"
    timeline = explain(result, recorder.events).timeline
    assert any(line.endswith("step 1: hedge sent to h2 (model m) after 0.05s") for line in timeline), timeline
    assert any(line.endswith("step 1: the hedge won: h2 answered first") for line in timeline), timeline


def _line(type: str, seq: int, step: int | None = None, **data: Any) -> str:
    record: dict[str, Any] = {"type": type, "run_id": "r", "seq": seq, "time": seq / 10}
    if step is not None:
        record["step"] = step
    return json.dumps({**record, **data}) + "\n"


def test_members_skipped_by_a_pool_or_a_chain_are_on_the_timeline(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(
        _line("run.started", 1, agent="w", messages=1)
        + _line("pool.skipped", 2, 1, member="a", index=0, reason="circuit_open")
        + _line("fallback.skipped", 3, 1, member="c", model="m", reason="circuit_open")
        + _line("llm.response", 4, 1, provider="b", response={"content": "ok", "provider": "b", "model": "m"})
        + _line("run.finished", 5, content="ok")
    )
    timeline = Explanation.from_jsonl(path, "r").timeline
    assert "+ 0.100s step 1: pool member a skipped (circuit_open)" in timeline, timeline
    assert "+ 0.200s step 1: chain member c skipped (circuit_open)" in timeline, timeline


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_hedge_the_provider_actor_had_no_room_for_is_on_the_timeline() -> None:
    # Two runs on one slot: the first run's hedge finds no room (the second run waits) and is not sent.
    hedged = with_hedge(_Slow(), after=0.05, max_extra=1.0)
    recorder = InMemoryRecorder()
    results = []
    async with Runtime(recorders=[recorder]) as rt:
        ProviderActor.shared(rt, hedged, max_concurrency=1)
        agent = Agent(hedged, name="hedged")

        async def one() -> None:
            results.append(await agent.run("y"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
    skipped = [e for e in recorder.events if e.type == "hedge.skipped"]
    assert skipped and all(isinstance(e, HedgeSkipped) for e in skipped)
    lines = [line for r in results for line in explain(r, recorder.events).timeline]
    assert any("hedge to slow not sent (admission: the ProviderActor had no room for it at once)" in line
               for line in lines), lines
