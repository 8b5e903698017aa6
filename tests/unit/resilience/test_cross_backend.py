"""docs/resilience.md §6 scenario 17: the same scenario yields the same call log, virtual timestamps
and event sequence on asyncio and on trio.

Each scenario runs once per backend inside one synchronous test (``anyio.run`` on the virtual clocks
of :func:`agentactors.testing.virtual_backends`), and the two traces are compared whole.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from agentactors.errors import ProviderError
from agentactors.messages import TextDelta
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.resilience import with_circuit_breaker, with_fallback, with_retry, with_timeout
from agentactors.testing import virtual_backends
from tests.support.resilience import REQ, CallLog, event_trace, http_error, recording

Trace = dict[str, Any]


async def chain_under_load() -> Trace:
    """Retries with jitter, a breaker that trips, waits out its open duration and probes, a fallback,
    a timeout, concurrent callers and a stream that is retried before its first event."""
    log = CallLog()

    async def slow(request: object) -> str:
        log.entries.append(("a", anyio.current_time()))
        await anyio.sleep(5)
        return "slow a"

    a_script = [
        *[log.item("a", http_error(503, provider="a")) for _ in range(6)],
        log.item("a", http_error(429, {"retry-after-ms": "1500"}, provider="a")),
        slow,
        log.item("a", http_error(503, provider="a")),
        log.item("a", "a recovered"),
        StreamCut("", http_error(502, provider="a")),
        log.item("a", "streamed from a"),
    ]
    a = ScriptedProvider(a_script, name="a", model="model-a")
    b = ScriptedProvider(lambda request: log.item("b", "from b")(request), name="b", model="model-b")
    chain = with_fallback(
        with_circuit_breaker(with_retry(with_timeout(a, attempt=2.0), rng=random.Random(1234)), consecutive_failures=2),
        with_circuit_breaker(with_retry(b, rng=random.Random(99))),
    )
    served: list[tuple[str | None, str, float]] = []

    async def ask(tag: str) -> None:
        try:
            response = await chain.complete(REQ)
            served.append((response.provider, response.content, anyio.current_time()))
        except ProviderError as exc:
            served.append((None, f"{tag}: {type(exc).__name__} {exc.kind.value}", anyio.current_time()))

    with recording() as rec:
        await ask("first")  # a: 503 x3 (retried), counted once by its breaker; b serves
        await ask("second")  # a: 503 x3 again: the breaker opens; b serves
        await ask("third")  # a refused at once; b serves
        await anyio.sleep(30)
        async with anyio.create_task_group() as tg:  # half-open: one probe, the rest refused
            # The probe: 429 (waits exactly 1.5 s), a hang cut by the 2 s timeout, a 503: it fails,
            # so the breaker opens again, for 60 s; b serves every caller.
            for i in range(4):
                tg.start_soon(ask, f"concurrent-{i}")
        await ask("after-probe")  # refused at once; b serves
        await anyio.sleep(60)
        await ask("probe-2")  # a answers the probe and closes its breaker
        # The stream's first attempt fails before its first event; the retry serves it from a.
        async with chain.stream(REQ) as events:
            text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
    return {
        "calls": log.entries,
        "served": served,
        "stream": text,
        "events": event_trace(rec),
        "end": anyio.current_time(),
    }


def run_on_both(scenario: Callable[[], Awaitable[Trace]]) -> list[Trace]:
    traces = []
    for backend, options in virtual_backends():
        traces.append(anyio.run(scenario, backend=backend, backend_options=options))
    return traces


def test_s17_same_call_log_timestamps_and_events_on_asyncio_and_trio() -> None:
    on_asyncio, on_trio = run_on_both(chain_under_load)
    # The scenario did what it is meant to exercise (so an empty trace cannot pass).
    types = {t for t, _, _ in on_asyncio["events"]}
    assert {
        "retry.scheduled",
        "retry.exhausted",
        "breaker.state_changed",
        "breaker.rejected",
        "fallback.moved",
    } <= types
    assert len(on_asyncio["calls"]) >= 10
    assert on_asyncio["end"] > 90
    assert on_asyncio["calls"] == on_trio["calls"]
    assert on_asyncio["served"] == on_trio["served"]
    assert on_asyncio["stream"] == on_trio["stream"]
    assert on_asyncio["events"] == on_trio["events"]
    assert on_asyncio["end"] == on_trio["end"]


@pytest.mark.parametrize("seed", [1, 2])
def test_s17_different_seeds_give_different_jitter_but_agree_across_backends(seed: int) -> None:
    async def retries() -> Trace:
        log = CallLog()
        p = ScriptedProvider([log.item("a", http_error(503)), log.item("a", http_error(503)), log.item("a", "ok")])
        with recording() as rec:
            await with_retry(p, rng=random.Random(seed)).complete(REQ)
        return {"calls": log.entries, "events": event_trace(rec)}

    first, second = run_on_both(retries)
    assert first == second
    assert len(first["calls"]) == 3
