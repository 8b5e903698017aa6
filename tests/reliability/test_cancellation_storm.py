"""The cancellation storm: hundreds of runs cancelled at random points leave nothing behind, on both backends.

Runs over loopback HTTP (a FakeVendor on 127.0.0.1, in a child process) call a slow async or a slow sync
tool, then stream or fetch a slow answer; each is cancelled by its caller's scope at a random moment — while
a request is in flight, while a stream is arriving, while a tool runs — and a batch is cancelled as a whole.
Afterwards
(issue 10; docs/reliability.md, "What cancellation leaves behind"):

* no task and no busy handler in the runtime (``rt.stats()``), no abandoned thread once the sync tools return;
* every ProviderActor permit is back: as many requests as its ``max_concurrency`` get in at once;
* no socket: every connection left in the client's pool is idle, no other socket to the vendor is open,
  and closing the client closes them all;
* the vendor saw every request it was still answering as a disconnect (none is left pending).

The storm runs through an injected ``httpx.AsyncClient`` (httpcore) on both backends, through the provider's
own pool — the h11 sender, the default on both — and through the aiohttp sender on asyncio, whose pools are
checked the same way.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agentactors._demo.vendor import VendorProcess
from agentactors.actors import Runtime, worker_threads
from agentactors.agent.core import Agent
from agentactors.events import Event, InMemoryRecorder
from agentactors.gateway import ProviderActor
from agentactors.messages import LLMRequest, LLMResponse
from agentactors.providers.http.h11_transport import H11Sender
from agentactors.providers.http.provider import HTTPProvider
from agentactors.providers.http.transport import ENV
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.port import StreamContext
from agentactors.tools import tool
from tests.reliability._vendor_models import STORM, STORM_ANSWER

pytestmark = [pytest.mark.anyio, pytest.mark.soak]  # `make soak` (CI runs it), not the default `make test`

KEY = "sk-storm-6a2b9d0e1f"
RUNS = 120
PERMITS = 32


@tool(timeout=None)
async def slow_async(n: int) -> str:
    """Takes a while, awaiting."""
    await anyio.sleep(0.15)
    return f"async {n}"


@tool(timeout=None)
def slow_sync(n: int) -> str:
    """Takes a while, blocking its worker thread."""
    time.sleep(0.15)
    return f"sync {n}"


class Gate:
    """A provider in front of the HTTP one that, once armed, holds each ``complete`` until ``count`` are in.

    After the storm it proves the ProviderActor's permits all came back: with one missing, only
    ``count - 1`` requests could get in and the gate would never open.
    """

    def __init__(self, inner: OpenAIProvider, *, closes_inner: bool = True) -> None:
        self.inner = inner
        self.closes_inner = closes_inner
        self.name = inner.name
        self.default_model = inner.default_model
        self.armed: tuple[int, anyio.Event] | None = None
        self.inside = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.armed is not None:
            count, all_in = self.armed
            self.inside += 1
            if self.inside == count:
                all_in.set()
            await all_in.wait()
        return await self.inner.complete(request)

    def stream(self, request: LLMRequest) -> StreamContext:
        return self.inner.stream(request)

    async def aclose(self) -> None:
        if self.closes_inner:  # else its pool outlives the runtime, to be inspected, and its test closes it
            await self.inner.aclose()


def _client_sockets(port: int) -> Counter[str]:
    """States of this machine's TCP sockets whose *remote* port is ``port``: the clients' ends (Linux)."""
    states = {"01": "ESTABLISHED", "02": "SYN_SENT", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "06": "TIME_WAIT",
              "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0B": "CLOSING"}
    found: Counter[str] = Counter()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port:
                found[states.get(fields[3], fields[3])] += 1
    return found


class Striker:
    """A recorder that cancels chosen runs where asked: in flight, mid-stream or mid-tool, for sure.

    The random storm hits every point only most of the time; these runs make the coverage certain.  A
    run is chosen by its prompt; at the event named for it, its scope's deadline is set a moment
    ahead (``after`` seconds: the request is on the wire, the tool is running) or reached at once.
    """

    def __init__(self) -> None:
        self.targets: dict[str, tuple[str, float, anyio.CancelScope]] = {}
        self.struck: Counter[str] = Counter()
        self._prompts: dict[str, str] = {}

    def aim(self, prompt: str, at: str, after: float) -> anyio.CancelScope:
        scope = anyio.CancelScope()
        self.targets[prompt] = (at, after, scope)
        return scope

    def record(self, event: Event) -> None:
        if event.run_id is None:
            return
        if event.type == "llm.request" and event.run_id not in self._prompts:
            self._prompts[event.run_id] = next(m.content for m in event.request.messages if m.role == "user")
        prompt = self._prompts.get(event.run_id)
        target = self.targets.get(prompt) if prompt is not None else None
        if target is not None and event.type == target[0]:
            at, after, scope = self.targets.pop(prompt)  # type: ignore[arg-type]
            scope.deadline = anyio.current_time() + after
            self.struck[at] += 1


def _where(events: list[Event]) -> str:
    """Where a cancelled run was when it was cancelled, read from its events."""
    last = "before its first request"
    for e in events:
        if e.type == "tools.finished" and e.status == "cancelled":
            return "mid-tool"  # the executor reports the calls a cancellation interrupted
        if e.type in ("llm.request", "llm.text_delta"):
            last = "mid-request" if e.type == "llm.request" else "mid-stream"
        elif e.type == "llm.response":
            last = "between steps"
    return last


async def _storm(rng: random.Random, gate: Gate, recorder: InMemoryRecorder, striker: Striker) -> None:
    """Runs cancelled at random points and at chosen ones, then the checks inside the runtime: every run
    ended, no task left, every permit back."""
    async with Runtime(recorders=[recorder, striker]) as rt:
        ref = ProviderActor.shared(rt, gate, max_concurrency=PERMITS)
        agent = Agent(ref, tools=[slow_async, slow_sync], nudges=False)
        finished: list[str] = []

        async def cancelled_at_random(n: int) -> None:
            prompt = f"{'sync' if n % 3 == 0 else 'async'} {n}"
            # Spread over two seconds, so that a few dozen are in flight at once: a storm, not a queue.
            await anyio.sleep(rng.uniform(0.0, 2.0))
            # One run in ten is spared (however slow a loaded machine makes it): runs get through the storm.
            with anyio.move_on_after(math.inf if n % 10 == 5 else rng.uniform(0.0, 0.9)):
                result = await agent.run(prompt, on_token=(lambda text: None) if n % 2 else None)
                finished.append(result.content)

        async def struck(prompt: str, at: str, after: float, stream: bool) -> None:
            await anyio.sleep(rng.uniform(0.0, 2.0))
            with striker.aim(prompt, at, after):
                await agent.run(prompt, on_token=(lambda text: None) if stream else None)

        aimed = [
            *((f"async {n}", "llm.request", 0.02, False) for n in range(1000, 1010)),  # on the wire
            *((f"async {n}", "llm.text_delta", 0.0, True) for n in range(1010, 1020)),  # mid-stream
            *((f"sync {n}", "tools.started", 0.05, False) for n in range(1020, 1030)),  # mid-tool, a thread
            *((f"async {n}", "tools.started", 0.05, False) for n in range(1030, 1035)),  # mid-tool, awaiting
        ]

        async def batch_cancelled_as_a_whole() -> None:
            await anyio.sleep(1.0)
            with anyio.move_on_after(0.4):
                await rt.run_many(agent, [f"async {n}" for n in range(RUNS, RUNS + 40)], concurrency=40)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for n in range(RUNS):
                    tg.start_soon(cancelled_at_random, n)
                for prompt, at, after, stream in aimed:
                    tg.start_soon(struck, prompt, at, after, stream)
                tg.start_soon(batch_cancelled_as_a_whole)
            await rt.wait_idle()

        # Where the storm struck: every kind of point was hit.
        by_run: dict[str, list[Event]] = {}
        cancelled: list[str] = []
        for e in recorder.events:
            if e.run_id is not None:
                by_run.setdefault(e.run_id, []).append(e)
            if e.type == "run.finished" and e.get("cancelled"):
                cancelled.append(e.run_id or "")
        points = Counter(_where(by_run[run_id]) for run_id in cancelled)
        assert {"mid-request", "mid-stream", "mid-tool"} <= set(points), points
        assert striker.struck == {"llm.request": 10, "llm.text_delta": 10, "tools.started": 15}
        assert len(finished) >= RUNS // 10, "the spared runs (and maybe others) got through the storm"
        assert set(finished) == {STORM_ANSWER}, finished[:3]
        started = sum(e.type == "run.started" for e in recorder.events)
        assert started == sum(e.type == "run.finished" for e in recorder.events)  # every run ended

        # No task, no busy handler, nothing queued.
        stats = rt.stats()
        assert (stats.tasks, stats.busy, stats.queued) == (0, 0, 0), stats

        # Every permit is back: PERMITS requests get in at once (the gate opens only when all are in).
        gate.armed = (PERMITS, anyio.Event())
        with anyio.fail_after(20):
            again = await rt.run_many(agent, [f"plain {n}" for n in range(PERMITS)], concurrency=PERMITS)
        assert all(r.ok for r in again), [r.error for r in again if not r.ok]
        gate.armed = None


async def _vendor_saw_every_cancelled_request_go(vendor: VendorProcess) -> None:
    """The vendor saw every request it was still answering as a disconnect; none is left pending."""
    requests, _ = await vendor.log(settle_within=10)
    outcomes = Counter(r.outcome for r in requests)
    assert set(outcomes) <= {"ok", "disconnected"}, outcomes
    assert outcomes["disconnected"] > 0, outcomes  # the storm did strike requests in flight


async def _abandoned_threads_return(before: int) -> None:
    """The sync tools' abandoned threads all return (they were counted meanwhile)."""
    with anyio.fail_after(10):
        while worker_threads().abandoned > before:  # noqa: ASYNC110 - threads change the count
            await anyio.sleep(0.01)


async def test_runs_cancelled_at_random_points_leave_nothing_behind(anyio_backend_name: str) -> None:
    rng = random.Random(f"storm-{anyio_backend_name}")
    threads_before = worker_threads().abandoned
    transport = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
    async with VendorProcess(faults=None, latency=0.05, api_key=KEY, model=STORM) as vendor, httpx.AsyncClient(
        transport=transport
    ) as client:
        port = httpx.URL(vendor.base_url).port
        assert port is not None
        gate = Gate(OpenAIProvider("gpt-storm", api_key=KEY, base_url=f"{vendor.base_url}/v1", http_client=client))
        await _storm(rng, gate, InMemoryRecorder(), Striker())

        # No socket: every pooled connection is idle, and no other socket to the vendor is open.
        connections = transport._pool.connections  # httpx keeps its httpcore pool private; read it here only
        assert all(c.is_idle() or c.is_closed() for c in connections), connections
        open_now = _client_sockets(port)
        assert open_now["ESTABLISHED"] <= sum(1 for c in connections if not c.is_closed()), open_now
        assert not open_now["SYN_SENT"] and not open_now["CLOSE_WAIT"], open_now
        await client.aclose()
        assert not _client_sockets(port)["ESTABLISHED"]  # closing the client closed every one

        await _vendor_saw_every_cancelled_request_go(vendor)
    await _abandoned_threads_return(threads_before)


async def test_the_storm_through_the_default_sender_leaves_nothing_behind(anyio_backend_name: str) -> None:
    """No injected client: the provider's own pool, the h11 sender (asyncio's lean protocol, trio's socket)."""
    await _storm_through_the_owned_pool(random.Random(f"storm-h11-{anyio_backend_name}"), "h11", _h11_idle)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # aiohttp runs on asyncio only
async def test_the_storm_through_the_aiohttp_sender_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """No injected client: the provider's own pool over aiohttp (``AGENTACTORS_HTTP_TRANSPORT=aiohttp``)."""
    monkeypatch.setenv(ENV, "aiohttp")
    await _storm_through_the_owned_pool(random.Random("storm-aiohttp"), "aiohttp", _aiohttp_idle)


async def _storm_through_the_owned_pool(
    rng: random.Random, sender: str, idle_of: Callable[[HTTPProvider], int]
) -> None:
    """The storm through a provider's own pool; then no connection of it in use, no socket beyond its idle ones."""
    threads_before = worker_threads().abandoned
    async with VendorProcess(faults=None, latency=0.05, api_key=KEY, model=STORM) as vendor:
        port = httpx.URL(vendor.base_url).port
        assert port is not None
        provider = OpenAIProvider("gpt-storm", api_key=KEY, base_url=f"{vendor.base_url}/v1")
        await _storm(rng, Gate(provider, closes_inner=False), InMemoryRecorder(), Striker())
        assert provider.transport == sender
        idle = idle_of(provider)
        open_now = _client_sockets(port)
        assert open_now["ESTABLISHED"] <= idle, (open_now, idle)
        assert not open_now["SYN_SENT"] and not open_now["CLOSE_WAIT"], open_now
        await provider.aclose()
        assert not _client_sockets(port)["ESTABLISHED"]  # closing the provider closed every one

        await _vendor_saw_every_cancelled_request_go(vendor)
    await _abandoned_threads_return(threads_before)


def _h11_idle(provider: HTTPProvider) -> int:
    """The h11 pool's idle connections, after checking none is in use.  (The sender is private: read here only.)"""
    sender = provider._sender
    assert isinstance(sender, H11Sender)
    open_, idle = sender.connections
    assert open_ == idle, sender.connections
    return idle


def _aiohttp_idle(provider: HTTPProvider) -> int:
    """aiohttp's idle connections, after checking none is acquired.  (Its connector is private: read here only.)"""
    connector = _aiohttp_connector(provider)
    assert not connector._acquired, connector._acquired
    return sum(len(conns) for conns in connector._conns.values())


def _aiohttp_connector(provider: HTTPProvider) -> Any:
    sender = provider._sender
    assert sender is not None and sender.name == "aiohttp"
    session = sender.session  # type: ignore[attr-defined]
    assert session is not None
    return session.connector
