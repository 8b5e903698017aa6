"""W13 partial output: a 1 MB typed list streamed, typed (``partial_output()``, or its events) vs plain text.

``run.py`` drives it.  One streamed answer of about 1 MB — a JSON list of small records, in deltas of
64 characters (~16,000 of them), from a scripted zero-latency provider — is consumed three ways, each in
its own runtime, interleaved per repetition:

* **plain text** — ``output_type=str``, the same JSON as answer text, read with ``run.text_stream()``:
  the baseline (what streaming itself costs);
* **typed, events** — ``output_type=list[Item]`` through the output tool, iterating ``agent.stream()``'s
  events (the partial values are built for any listener);
* **typed, partial_output()** — the same, reading ``run.partial_output()``.

Reported: the wall time of the whole run (median, min–max) and its ratio to plain text, the number of
partial values, and the longest the event loop was held in one go (a task that sleeps 1 ms in a loop
measures how late it wakes: the worst lateness over the run).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from agentactors import (
    Agent,
    LLMResponse,
    StopReason,
    StreamEnd,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)


@dataclasses.dataclass
class Item:
    name: str
    qty: int
    note: str = ""


class _Streamer:
    """A zero-latency provider that streams one answer (text or an output tool call) in fixed-size deltas."""

    name = "streamer"
    default_model = "s-1"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(self, answer: str | ToolCall, step: int) -> None:
        self.answer = answer
        self.step = step

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        return True

    def supports_response_format(self, model: str | None) -> bool:
        return True

    def _response(self) -> LLMResponse:
        if isinstance(self.answer, ToolCall):
            return LLMResponse("", (self.answer,), StopReason.tool_use)
        return LLMResponse(self.answer)

    async def complete(self, request: Any) -> LLMResponse:
        return self._response()

    def stream(self, request: Any) -> Any:
        response, step = self._response(), self.step

        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[Any]]:
            async def events() -> AsyncIterator[Any]:
                for i in range(0, len(response.content), step):
                    yield TextDelta(response.content[i : i + step])
                for index, call in enumerate(response.tool_calls):
                    yield ToolCallStart(index, call.id, call.name)
                    raw = call.arguments_json
                    for i in range(0, len(raw), step):
                        yield ToolCallDelta(index, raw[i : i + step])
                    yield ToolCallEnd(index, call)
                yield StreamEnd(response)

            yield events()

        return cm()

    async def aclose(self) -> None:
        pass


def _records(size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    total = 0
    while total < size:
        record = {"name": f"record number {len(out)}", "qty": len(out), "note": "a few words of note"}
        out.append(record)
        total += len(json.dumps(record)) + 2
    return out


async def _one(kind: str, records: list[dict[str, Any]], step: int) -> dict[str, float]:
    if kind == "plain text":
        agent: Agent[Any] = Agent(_Streamer(json.dumps(records), step))
    else:
        agent = Agent(_Streamer(ToolCall("c1", "final_result", {"response": records}), step), output_type=list[Item])
    worst = 0.0
    partials = 0

    async def ticker() -> None:
        nonlocal worst
        while True:
            before = time.perf_counter()
            await anyio.sleep(0.001)
            worst = max(worst, time.perf_counter() - before - 0.001)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.sleep(0.01)
        worst = 0.0
        t0 = time.perf_counter()
        async with agent.stream("list them") as run:
            if kind == "plain text":
                async for _ in run.text_stream():
                    pass
            elif kind == "typed, events":
                async for event in run:
                    partials += event.type == "output.partial"
            else:
                async for _ in run.partial_output():
                    partials += 1
        elapsed = time.perf_counter() - t0
        tg.cancel_scope.cancel()
    assert run.result.ok, run.result.error
    return {"seconds": elapsed, "partials": partials, "worst_stall": worst}


KINDS = ("plain text", "typed, events", "typed, partial_output()")


def w13_partial(*, reps: int, smoke: bool) -> dict[str, Any]:
    size = 20_000 if smoke else 1_000_000
    step = 64
    records = _records(size)
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}
    for _ in range(reps):
        for kind in KINDS:
            samples[kind].append(anyio.run(_one, kind, records, step))
    rows: dict[str, Any] = {}
    base = statistics.median(s["seconds"] for s in samples["plain text"])
    for kind, runs in samples.items():
        seconds = [r["seconds"] for r in runs]
        rows[kind] = {
            "median": statistics.median(seconds),
            "min": min(seconds),
            "max": max(seconds),
            "vs_plain": statistics.median(seconds) / base,
            "partials": runs[-1]["partials"],
            "worst_stall": max(r["worst_stall"] for r in runs),
        }
    chars = len(json.dumps({"response": records}))
    return {"bytes": chars, "records": len(records), "deltas": -(-chars // step), "rows": rows}


if __name__ == "__main__":
    print(json.dumps(w13_partial(reps=1, smoke=False), indent=2))
