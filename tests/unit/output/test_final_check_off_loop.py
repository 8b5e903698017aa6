"""The final check of a big typed answer runs in a worker thread: the event loop keeps ticking meanwhile.

Reading a 1 MB JSON answer, walking it against the depth policy, validating it against the schema and
converting 15,000 items takes about a second; done on the loop, every other run of the process stood still
for as long.  A sampler task ticking every millisecond beside the run shows the difference: with the
check inline, its longest gap is the whole check; off the loop, a small part of it.  Both strategies that
carry an answer (text, an output tool's arguments), both backends, real clocks (a worker thread).  Small
answers stay inline: no thread hop for the answers nearly every run gets.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import attrs
import pytest

from agentactors import Agent, LLMRequest, PromptedOutput, ScriptedProvider, ToolCall, ToolOutput
from agentactors.output import _heavy

pytestmark = pytest.mark.anyio

ITEMS = 15_000


@attrs.frozen
class Item:
    name: str
    qty: int
    tags: list[str]


def _items(n: int) -> list[dict[str, Any]]:
    return [{"name": f"item number {i}", "qty": i, "tags": ["a", "b", "c"]} for i in range(n)]


def _agent(kind: str, n: int) -> Agent[list[Item]]:
    items = _items(n)
    if kind == "text":
        text = json.dumps({"response": items})

        def answer(request: LLMRequest) -> Any:
            return text

        return Agent(ScriptedProvider(answer), output_type=PromptedOutput(list[Item]))

    def call(request: LLMRequest) -> Any:
        return ToolCall("c1", "final_result", {"response": items})

    return Agent(ScriptedProvider(call), output_type=ToolOutput(list[Item]))


async def _ticks_during(agent: Agent[list[Item]]) -> tuple[list[Item], float, list[float]]:
    """The run's output, how long it took, and the gaps between the ticks of a 1 ms sampler beside it."""
    ticks: list[float] = []
    done = anyio.Event()

    async def sampler(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        task_status.started()
        while not done.is_set():
            ticks.append(time.perf_counter())
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as tg:
        await tg.start(sampler)  # it ticks before the run starts
        started = time.perf_counter()
        result = await agent.run("list them")
        took = time.perf_counter() - started
        done.set()
    assert result.ok and result.output is not None, result.error
    window = [t for t in ticks if t >= started] + [started + took]
    gaps = [b - a for a, b in zip([started, *window], window, strict=False)]
    return result.output, took, gaps


@pytest.mark.parametrize("kind", ["text", "tool"])
async def test_the_loop_keeps_ticking_during_the_final_check_of_a_1mb_answer(kind: str) -> None:
    agent = _agent(kind, ITEMS)
    warm = await _agent(kind, 3).run("warm up")  # first-use imports (pricing, jsonschema) are not the check
    assert warm.ok
    with anyio.fail_after(300):
        output, took, gaps = await _ticks_during(agent)
    assert len(output) == ITEMS and output[-1] == Item(f"item number {ITEMS - 1}", ITEMS - 1, ["a", "b", "c"])
    # Inline, one gap is the whole run (≈ 1 s idle, several loaded) and the sampler ticks once or twice.
    # Off the loop, the sampler keeps running between the interpreter's thread switches — except while
    # the thread is inside one C call that keeps the GIL (json.loads of the 1 MB text, a collection of
    # the garbage collector over its objects: ~20 ms idle, but stretched by whatever else the cores run:
    # with more runnable processes than cores one such call was seen at 0.3 s of a 0.46 s run), so the
    # bound is loose: short of the whole run, which is what the inline check gave, and ticks all along.
    assert max(gaps) < took * 0.8, (max(gaps), took)
    assert len(gaps) >= 10, (len(gaps), took)


@pytest.mark.parametrize("kind", ["text", "tool"])
async def test_a_small_answer_is_checked_inline(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hops: list[object] = []
    real = anyio.to_thread.run_sync

    async def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)  # the module _heavy reads it from
    result = await _agent(kind, 20).run("list them")
    assert result.ok and result.output is not None and len(result.output) == 20
    assert hops == []
    big = await _agent(kind, 2_000).run("list them")  # ~100 KB: past the limit, one hop
    assert big.ok and big.output is not None and len(big.output) == 2_000
    assert len(hops) == 1


def test_what_counts_as_heavy() -> None:
    limit = _heavy.INLINE_LIMIT
    assert not _heavy.heavy_text(None) and not _heavy.heavy_text("x" * limit) and _heavy.heavy_text("x" * (limit + 1))
    assert not _heavy.heavy_value({"response": _items(20)})
    assert _heavy.heavy_value({"response": _items(2_000)})
    assert _heavy.heavy_value({"a": "x" * (limit + 1)})
    assert _heavy.heavy_value({"k" * (limit + 1): 1})  # keys count too
    assert _heavy.heavy_value([[0] * 100] * 1_000)  # many small items
    deep: Any = 1
    for _ in range(100_000):  # any depth: the walk is a stack, bounded by the limit
        deep = [deep]
    assert _heavy.heavy_value(deep)
