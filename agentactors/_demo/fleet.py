"""The demo's fleet: many agents, one ProviderActor, the chain of :mod:`agentactors._demo.chain`, the vendors.

This module only *runs* the fleet and collects the raw material — the run
results, every event, the vendor's request log and the live counters.  Turning
that into numbers and an explanation is :mod:`agentactors._demo.report`; showing
it is :mod:`agentactors._demo.main`.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import attrs
import httpx

from ..actors.runtime import Runtime
from ..agent.core import Agent
from ..errors import StreamInterruptedError
from ..events import Event, InMemoryRecorder
from ..gateway.provider import ProviderActor
from ..loop.result import RunResult
from .chain import DemoSettings, Member, Stamper, VendorSpec, build_chain, fake_endpoint, offline_members
from .tasks import Task, make_catalogue, make_tasks, make_tools
from .vendor import LoggedRequest, VendorProcess

__all__ = ["CANARY_PREFIX", "SYSTEM_PROMPT", "FleetRun", "LiveCounters", "TaskOutcome", "run_fleet_raw"]

#: The offline run's credential starts with this (a test looks for it where it must not be).
CANARY_PREFIX = "demoCanary"

SYSTEM_PROMPT = (
    "You are a shop assistant. Answer price questions with the tools: look the price up first, then convert "
    "it. Quote both tool results in your answer."
)


# --- live counters (read by the progress view while the fleet runs) -------------------------------


class LiveCounters:
    """A recorder that counts what the progress view shows, and triggers the outage.

    ``on_response(count)`` is called with the number of model answers so far
    (``llm.response`` events), so the fleet can open the outage window once
    enough traffic went by — at any scale, whatever the machine's speed.
    """

    def __init__(self, total: int, on_response: Callable[[int], None] | None = None) -> None:
        self.total = total
        self.done = 0
        self.ok = 0
        self.failed = 0
        self.bounded = 0
        self.requests = 0
        self.responses = 0
        self.retries = 0
        self.failovers = 0
        self.breaker_opens = 0
        self._on_response = on_response

    def record(self, event: Event) -> None:
        kind = event.type
        if kind == "llm.request":
            self.requests += 1
        elif kind == "llm.response":
            self.responses += 1
            if self._on_response is not None:
                self._on_response(self.responses)
        elif kind == "retry.scheduled":
            self.retries += 1
        elif kind == "fallback.moved":
            self.failovers += 1
        elif kind == "breaker.state_changed" and str(event.get("to_state")) == "open":
            self.breaker_opens += 1

    def finished(self, result: RunResult[Any] | None) -> None:
        self.done += 1
        if result is not None and result.ok:
            self.ok += 1
        elif result is not None and result.bounded:
            self.bounded += 1
        else:
            self.failed += 1


# --- running -------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class TaskOutcome:
    """What became of one task: the run that ended it, how long it took, and whether it was re-run."""

    task: Task
    result: RunResult[Any] | None
    latency: float
    streamed: bool
    reruns: int = 0
    first_run_id: str | None = None
    error: BaseException | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True, eq=False)
class FleetRun:
    """The raw material of a fleet run (see :mod:`agentactors._demo.report`)."""

    outcomes: tuple[TaskOutcome, ...]
    events: tuple[Event, ...]
    members: tuple[Member, ...]
    vendor_requests: tuple[LoggedRequest, ...]  # empty when real vendors served
    vendor_stats: dict[str, Any]
    outages: tuple[tuple[float, float], ...]  # the primary's, client clock
    started: float
    finished: float
    streamed_chars: int
    client_log: tuple[tuple[str, float, str | None], ...]
    live: bool
    fault_rate: float


def _interrupted(result: RunResult[Any]) -> bool:
    return isinstance(result.error, StreamInterruptedError)


async def _drive(
    tasks: Sequence[Task],
    agents: Sequence[Agent[Any]],
    counters: LiveCounters,
    *,
    stream_every: int,
) -> tuple[list[TaskOutcome], int]:
    outcomes: list[TaskOutcome | None] = [None] * len(tasks)
    streamed_chars = [0]

    def on_token(text: str) -> None:
        streamed_chars[0] += len(text)

    async def one(task: Task) -> None:
        agent = agents[task.index]
        streamed = stream_every > 0 and task.index % stream_every == 0
        start = anyio.current_time()
        result: RunResult[Any] | None = None
        error: BaseException | None = None
        reruns = 0
        first_run: str | None = None
        try:
            result = await agent.run(task.prompt, on_token=on_token if streamed else None)
            if _interrupted(result):
                # The library never replays a stream the consumer saw part of.  This task is
                # idempotent (two read-only tools), so the application may ask again: once.
                first_run = result.run_id
                reruns = 1
                result = await agent.run(task.prompt, on_token=on_token if streamed else None)
        except Exception as exc:  # a run must not take its neighbours down; it is reported as failed
            error = exc
        outcomes[task.index] = TaskOutcome(
            task, result, anyio.current_time() - start, streamed, reruns, first_run, error
        )
        counters.finished(result)

    async with anyio.create_task_group() as tg:
        for task in tasks:
            tg.start_soon(one, task)
    return [o for o in outcomes if o is not None], streamed_chars[0]


async def run_fleet_raw(
    *,
    agents: int,
    fault_rate: float,
    seed: int,
    outage: bool,
    live_specs: Sequence[VendorSpec] | None = None,
    settings: DemoSettings | None = None,
    on_start: Callable[[LiveCounters, list[Member]], None] | None = None,
) -> FleetRun:
    """Run the fleet and return what happened (no analysis, no output).

    Offline (``live_specs`` is ``None``): a FakeVendor on 127.0.0.1 with a canary
    API key, the demo's fake model, faults on the primary's wire only, and — with
    ``outage`` — the outages (see :class:`DemoSettings`).  Live: ``live_specs``
    in chain order, faults (if any) injected client-side before sending.

    ``on_start(counters, members)`` is called once the agents are about to
    start: the live counters and the chain's members (for a progress view).

    Errors: a failure to start the vendor or the runtime propagates; a run's own
    failure never does (it is an outcome).  Cancellation propagates and stops everything.
    """
    if agents < 1:
        raise ValueError("agents must be >= 1")
    if not 0.0 <= fault_rate <= 1.0:
        raise ValueError("fault_rate must be within [0, 1]")
    settings = settings or (DemoSettings.for_live() if live_specs is not None else DemoSettings())
    catalogue = make_catalogue(seed)
    tasks = make_tasks(agents, seed, catalogue)
    tools = make_tools(catalogue)
    recorder = InMemoryRecorder()
    if live_specs is not None:
        return await _run(
            tasks, tools, recorder, settings, list(live_specs), fv=None, fault_rate=fault_rate, seed=seed,
            outage=False, on_start=on_start,
        )
    from ..testing import FaultKind, FaultPlan

    # Letters and digits only: the canary is also Bedrock's access key id (and secret) and Vertex's token.
    canary = CANARY_PREFIX + secrets.token_hex(12)
    primary_wire, primary_model = fake_endpoint(offline_members("", canary)[0])
    faults = FaultPlan(
        rate=fault_rate,
        seed=seed,
        # 429s (with retry-after), 529/503 overloads, 500s, mid-stream disconnects and hung answers.
        weights={
            FaultKind.rate_limit: 3.0,
            FaultKind.overloaded: 3.0,
            FaultKind.server_error: 1.0,
            FaultKind.disconnect: 2.0,
            FaultKind.timeout: 0.5,
        },
        retry_after=0.25,
        hang=settings.attempt_timeout + 2.0,
        cut_after=1,
        wires=(primary_wire,),
        models=(primary_model,),  # an Azure chat deployment speaks the same wire: spared
    ) if fault_rate > 0 else None
    async with VendorProcess(faults=faults, latency=settings.vendor_latency, api_key=canary) as vendor:
        specs = offline_members(vendor.base_url, canary)
        return await _run(
            tasks, tools, recorder, settings, specs, fv=vendor, fault_rate=fault_rate, seed=seed, outage=outage,
            on_start=on_start,
        )


async def _run(
    tasks: list[Task],
    tools: Sequence[Any],
    recorder: InMemoryRecorder,
    settings: DemoSettings,
    specs: list[VendorSpec],
    *,
    fv: VendorProcess | None,
    fault_rate: float,
    seed: int,
    outage: bool,
    on_start: Callable[[LiveCounters, list[Member]], None] | None,
) -> FleetRun:
    windows: list[tuple[float, float]] = []
    # About three model calls a task; outage k opens once `outage_after + k * outage_every` of them were
    # answered and takes the first k + 1 members down: member k + 1 serves (see DemoSettings).
    thresholds = [
        max(1, math.ceil((settings.outage_after + k * settings.outage_every) * 3 * len(tasks)))
        for k in range(len(specs) - 1)
    ]

    def maybe_open_outage(responses: int) -> None:
        k = len(windows)
        if fv is None or not outage or k >= len(thresholds) or responses < thresholds[k]:
            return
        now = anyio.current_time()
        duration = settings.outage_duration + k * settings.outage_lengthening
        windows.append((now, now + duration))
        for spec in specs[:k + 1]:
            wire, model = fake_endpoint(spec)
            fv.outage(wire=wire, model=model, duration=duration)

    counters = LiveCounters(len(tasks), maybe_open_outage)
    limits = httpx.Limits(
        max_connections=settings.max_concurrency * 2, max_keepalive_connections=settings.max_concurrency
    )
    timeout = httpx.Timeout(connect=10.0, read=60.0, write=30.0, pool=30.0)
    stamper = Stamper()
    async with httpx.AsyncClient(limits=limits, timeout=timeout, event_hooks={"request": [stamper]}) as client:
        client_faults = fault_rate if fv is None else 0.0
        chain, members = build_chain(specs, client, settings, client_faults=client_faults, seed=seed)
        async with Runtime(recorders=(recorder, counters)) as rt:
            ref = ProviderActor.shared(rt, chain, max_concurrency=settings.max_concurrency)
            fleet = [
                Agent(ref, tools=tools, system=SYSTEM_PROMPT, max_steps=settings.max_steps, name=f"agent-{t.index:04d}")
                for t in tasks
            ]
            if on_start is not None:
                on_start(counters, members)
            started = anyio.current_time()
            outcomes, streamed_chars = await _drive(
                tasks, fleet, counters, stream_every=settings.stream_every
            )
            finished = anyio.current_time()
    vendor_requests: tuple[LoggedRequest, ...] = ()
    vendor_stats: dict[str, Any] = {}
    if fv is not None:
        vendor_requests, vendor_stats = await fv.log()
    return FleetRun(
        outcomes=tuple(outcomes),
        events=tuple(recorder.events),
        members=tuple(members),
        vendor_requests=vendor_requests,
        vendor_stats=vendor_stats,
        outages=tuple(windows),
        started=started,
        finished=finished,
        streamed_chars=streamed_chars,
        client_log=tuple(stamper.sent),
        live=fv is None,
        fault_rate=fault_rate,
    )
