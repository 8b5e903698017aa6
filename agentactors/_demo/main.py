"""``python -m agentactors demo``: a thousand agents through a resilient six-endpoint chain, offline.

Each agent answers "How much does a <item> cost in <currency>?" with two tools
(``lookup_price``, then ``convert_currency``).  All of them share ONE
:class:`~agentactors.gateway.provider.ProviderActor` holding the recommended
stack over six endpoints on five wires::

    with_fallback(with_circuit_breaker(with_retry(with_timeout(openai))),      # the primary: faults injected
                  with_circuit_breaker(with_retry(with_timeout(openai-responses))),
                  with_circuit_breaker(with_retry(with_timeout(azure-openai))),
                  with_circuit_breaker(with_retry(with_timeout(anthropic))),
                  with_circuit_breaker(with_retry(with_timeout(gemini-vertex))),
                  with_circuit_breaker(with_retry(with_timeout(bedrock))))     # with the [bedrock] extra

The vendors are a :class:`~agentactors.testing.FakeVendor` on 127.0.0.1 (in a
child process) serving every endpoint: Chat Completions, Responses, an Azure
deployment's route, Anthropic Messages, Gemini on Vertex AI (a bearer token)
and Bedrock's ConverseStream (SigV4, the AWS event stream).  The primary
answers a share of requests with 429s (with retry-after), 503s, 500s,
mid-stream disconnects and hung answers, and goes down for a while (an outage)
so that its breaker opens, probes and closes again within the run; the outage
comes back, each time with one more member down beside the primary, so that
each fallback is seen serving.
The demo ends with a summary computed from what was recorded, one run explained
from its events, and the full event record as JSONL.

``--live`` runs the same fleet against the real vendors whose API keys are in
the environment (3 agents, no injected faults unless told otherwise), after
saying how many requests it may send at most.  No API key is ever printed or recorded.

Benchmarks call :func:`run_fleet_sync` / :func:`run_fleet`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import attrs

from .._backend import run_loop
from ..events import Event, JsonlRecorder
from . import MAX_AGENTS
from .chain import DemoSettings, Member, VendorSpec, live_members, offline_endpoints, request_bound
from .fleet import LiveCounters, run_fleet_raw
from .report import FleetReport, RunExplanation, analyze
from .vendor import LoggedRequest
from .view import View, make_view

__all__ = [
    "DEFAULT_AGENTS",
    "DEFAULT_FAULT_RATE",
    "DEFAULT_RECORD",
    "LIVE_AGENTS",
    "FleetReport",
    "LiveUnavailable",
    "RecordNotWritten",
    "RunExplanation",
    "run_demo",
    "run_fleet",
    "run_fleet_sync",
]

DEFAULT_AGENTS = 1000
DEFAULT_FAULT_RATE = 0.15
LIVE_AGENTS = 3
#: Where the event record goes unless ``--record`` says otherwise (the current directory).
DEFAULT_RECORD = "demo-events.jsonl"
#: Below this share of verified answers the demo calls the run a failure (exit code 1).
MIN_GOODPUT = 0.8


class LiveUnavailable(RuntimeError):
    """``--live`` without any vendor API key in the environment (the demo's, not a library error)."""


class RecordNotWritten(RuntimeError):
    """The event record could not be written once the runs had ended (a full disk, the path taken meanwhile).

    A ``RuntimeError`` like the demo's other failures; its text names the path and the reason.
    """


def write_record(
    path: str | Path, events: Sequence[Event], vendor_log: Sequence[LoggedRequest], report: FleetReport
) -> int:
    """Write the record to ``path`` as JSONL (replacing it); returns the number of lines.

    Every event, then one ``vendor.request`` line per request the fake vendor
    received (with the send time the client stamped on it), then one
    ``demo.summary`` line: enough to recompute every figure of the summary.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("", encoding="utf-8")
    with JsonlRecorder(target, full_requests=True) as recorder:  # re-checkable line by line as plain JSON
        for event in events:
            recorder.record(event)
        for request in vendor_log:
            recorder.record(Event("vendor.request", data=attrs.asdict(request)))
        recorder.record(Event("demo.summary", data={"report": report.as_dict()}))
    return len(events) + len(vendor_log) + 1


def record_problem(path: str) -> str | None:
    """Why the event record cannot be written at ``path`` (``None`` when it can), found before the run.

    The record is written once every run has ended: a read-only directory or a mistyped path found only
    then would cost the whole run and end in a traceback.  The check opens the file for appending (an
    existing record is left as it is) and removes it again when it did not exist before.
    """
    target = Path(path)
    existed = target.exists()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8"):
            pass
        if not existed:
            target.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


async def run_fleet(
    *,
    agents: int = DEFAULT_AGENTS,
    fault_rate: float = DEFAULT_FAULT_RATE,
    seed: int = 7,
    outage: bool = True,
    progress: bool = False,
    record: str | None = None,
    backend: str = "asyncio",
    live: bool = False,
    view: View | None = None,
    settings: DemoSettings | None = None,
) -> FleetReport:
    """Run the fleet in the current event loop and return its :class:`FleetReport`.

    ``backend`` is accepted for symmetry with :func:`run_fleet_sync` (the
    running loop decides).  ``progress`` shows a live progress view (``view``
    overrides which).  ``record`` writes the full event record there as JSONL.
    ``live`` talks to the real vendors whose keys are in the environment
    (``outage`` does not apply: nobody can take a real vendor down).

    Errors: :class:`LiveUnavailable` when ``live`` finds no API key; :class:`RecordNotWritten` when
    ``record`` cannot be written; a failure
    to start the fake vendor raises ``RuntimeError``, and so does its process
    ending mid-run (:class:`~agentactors._demo.vendor.VendorGone`, a
    ``RuntimeError``); each is raised as itself, never inside an ``ExceptionGroup``.
    A run's own failure is never raised: it is counted in the report.
    Cancellation stops every run and the vendor process, and propagates.
    """
    del backend  # the caller's event loop is the backend
    specs: list[VendorSpec] | None = None
    if live:
        specs = live_members()
        if not specs:
            raise LiveUnavailable(
                "--live needs an API key in the environment: OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY "
                "or GOOGLE_API_KEY"
            )
    if view is None and progress:
        view = make_view()
    async with anyio.create_task_group() as tg:

        async def tick(counters: LiveCounters, members: list[Member]) -> None:
            assert view is not None
            start = anyio.current_time()
            while True:
                view.update(counters, members[0].breaker.state.value, anyio.current_time() - start)
                await anyio.sleep(view.interval)

        last: list[tuple[LiveCounters, list[Member], float]] = []

        def on_start(counters: LiveCounters, members: list[Member]) -> None:
            last.append((counters, members, anyio.current_time()))
            if view is not None:
                view.start(counters.total)
                tg.start_soon(tick, counters, members)

        failed: list[Exception] = []
        try:
            fleet = await run_fleet_raw(
                agents=agents, fault_rate=fault_rate, seed=seed, outage=outage, live_specs=specs,
                settings=settings, on_start=on_start,
            )
        except Exception as exc:  # raised below, after the group: as itself, not in an ExceptionGroup
            failed.append(exc)
        finally:
            tg.cancel_scope.cancel()
            if view is not None and last:
                counters, members, started = last[0]
                view.update(counters, members[0].breaker.state.value, anyio.current_time() - started)
                view.stop()
    if failed:
        raise failed[0]
    report = analyze(fleet, record=record)
    if record is not None:
        try:
            await anyio.to_thread.run_sync(write_record, record, fleet.events, fleet.vendor_requests, report)
        except OSError as exc:
            raise RecordNotWritten(f"cannot write the event record to {record}: {exc.strerror or exc}") from exc
    return report


def run_fleet_sync(
    *,
    agents: int,
    fault_rate: float,
    seed: int,
    outage: bool = True,
    progress: bool = False,
    record: str | None = None,
    backend: str = "asyncio",
) -> FleetReport:
    """:func:`run_fleet` in a new event loop on ``backend`` (``"asyncio"`` or ``"trio"``)."""

    async def main() -> FleetReport:
        return await run_fleet(
            agents=agents, fault_rate=fault_rate, seed=seed, outage=outage, progress=progress, record=record
        )

    return run_loop(main, backend)


# --- the command ------------------------------------------------------------------------------------


def _header(args: argparse.Namespace, agents: int, fault_rate: float, outage: bool, settings: DemoSettings,
            specs: list[VendorSpec] | None) -> list[str]:
    s = settings
    if specs is None:
        names = offline_endpoints()
        where = (f"FakeVendor on 127.0.0.1 (a child process) — {len(names)} endpoints: "
                 + ", ".join(w for w, _ in names) + "; a canary credential")
    else:
        names = [(v.wire, f"{v.model} at {urlsplit(v.base_url).netloc}") for v in specs]
        where = "LIVE: the real vendors whose API keys are in the environment (keys are never printed)"
    members = [f"    with_circuit_breaker(with_retry(with_timeout({w}: {m})))" for w, m in names]
    members[0] += "   ← primary" + (", faults injected" if fault_rate > 0 else "")
    lines = [
        f"{agents:,} agents, each its own Agent and tool actor, all sharing ONE ProviderActor "
        f"(≤ {s.max_concurrency} requests in flight)",
        "task: \"How much does a <item> cost in <currency>?\" — tools lookup_price, then convert_currency; "
        "every other run streams",
        "chain: with_fallback(",
        *[m + ("," if i < len(members) - 1 else ")") for i, m in enumerate(members)],
        f"  retry: {s.max_attempts} attempts, backoff {s.base_delay:g}–{s.max_delay:g}s, honours retry-after "
        f"≤ {s.max_retry_after:g}s; stops once its breaker has opened",
        f"  breaker: opens after {s.consecutive_failures} failures in a row or ≥ {s.failure_rate:.0%} of "
        f"≥ {s.min_calls} calls in {s.window:g}s; probes after {s.open_duration:g}s (doubling, ≤ "
        f"{s.max_open_duration:g}s)",
        f"  timeouts: {s.attempt_timeout:g}s per attempt, {s.first_event_timeout:g}s to a stream's first event",
        "  a stream cut after its first event is never replayed by the library; the demo re-runs that task once "
        "(its tools only read)",
        f"vendors: {where}",
    ]
    if specs is None:
        lines.append(
            f"faults on the primary: {fault_rate:.0%} of its requests (429 with retry-after, 503, 500, mid-stream "
            "disconnects, hung answers)"
            + (f"; outages: once {s.outage_after:.0%} of the model calls were answered the primary goes down "
               f"for {s.outage_duration:g}s, and again every {s.outage_every:.0%} more, {s.outage_lengthening:g}s "
               f"longer each time, with one more member beside it ({len(names) - 1} outages: each fallback is seen "
               "serving)" if outage else "")
        )
    elif fault_rate > 0:
        lines.append(f"faults: {fault_rate:.0%} of the primary's calls fail client-side before sending (as a 503)")
    lines.append(f"seed {args.seed} · backend {args.backend} · event record → {args.record}")
    return lines


def _verdict(report: FleetReport) -> tuple[int, list[str]]:
    problems = []
    if report.primary_calls_while_open:
        problems.append(f"{report.primary_calls_while_open} requests reached the primary while its breaker was open")
    if report.unstamped_primary_calls:
        problems.append(f"{report.unstamped_primary_calls} primary requests could not be checked (no send time)")
    if not report.live and report.wrong:
        problems.append(f"{report.wrong} ok runs do not quote their own tool results")
    good = (report.ok if report.live else report.verified) / report.agents if report.agents else 0.0
    if good < MIN_GOODPUT:
        problems.append(f"goodput {good:.1%} is below {MIN_GOODPUT:.0%}")
    if problems:
        return 1, ["✗ " + p for p in problems]
    return 0, [f"✓ goodput {good:.1%}, no request reached the primary while its breaker was open, "
               + ("answers not checked (real models word them freely)" if report.live
                  else "every ok answer quotes its own tool results")]


def _holds(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` is a ``kind``, or an exception group with one among its leaves."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(kind) is not None
    return isinstance(exc, kind)


def run_demo(args: argparse.Namespace) -> int:
    """The ``demo`` command.  Returns the exit code: 0 on success, 1 when a check failed (or the vendor process
    died or hung, or the record could not be written), 2 when it cannot run (a usage error), 130 on Ctrl-C."""
    if getattr(args, "batch", False):
        from .batch import run_batch_demo

        return run_batch_demo(args)
    live = bool(getattr(args, "live", False))
    if getattr(args, "record", None) is None:  # None: not given (``--batch`` refuses it given, writing none)
        args = argparse.Namespace(**{**vars(args), "record": DEFAULT_RECORD})
    agents = args.agents if args.agents is not None else (LIVE_AGENTS if live else DEFAULT_AGENTS)
    fault_rate = args.fault_rate if args.fault_rate is not None else (0.0 if live else DEFAULT_FAULT_RATE)
    outage = not getattr(args, "no_outage", False)
    if not 1 <= agents <= MAX_AGENTS or not 0.0 <= fault_rate <= 1.0:  # the parser checks both; a caller's
        print(f"demo: --agents must be within [1, {MAX_AGENTS:,}] and --fault-rate within [0, 1]", file=sys.stderr)
        return 2
    settings = DemoSettings.for_live() if live else DemoSettings()
    view = make_view(no_progress=bool(args.no_progress))
    specs = None
    if live:
        specs = live_members()
        if not specs:
            print("demo --live: no API key found. Set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY "
                  "(or GOOGLE_API_KEY) to talk to the real vendors; without --live the demo runs offline.",
                  file=sys.stderr)
            return 2
    problem = record_problem(args.record)
    if problem is not None:
        print(f"demo: cannot write the event record to {args.record}: {problem} (--record chooses where)",
              file=sys.stderr)
        return 2
    view.header(_header(args, agents, fault_rate, outage, settings, specs))
    if specs is not None:
        bound = request_bound(agents, len(specs), settings)
        view.line(f"live: this may send at most {bound:,} requests ({agents} agents × {settings.max_steps} steps × "
                  f"{len(specs)} vendor{'' if len(specs) == 1 else 's'} × {settings.max_attempts} attempts, × 2 if "
                  "a cut stream is re-run); "
                  "usually about 3 per agent.")

    async def main() -> FleetReport:
        return await run_fleet(
            agents=agents, fault_rate=fault_rate, seed=args.seed, outage=outage, record=args.record,
            live=live, view=view, settings=settings,
        )

    try:
        report = run_loop(main, args.backend)
    except BaseException as exc:
        # Trio raises Ctrl-C's KeyboardInterrupt in whichever task was running: it arrives in an ExceptionGroup.
        if _holds(exc, KeyboardInterrupt):
            view.line("demo: interrupted; every run was cancelled and the fake vendor stopped.")
            return 130
        if isinstance(exc, RecordNotWritten):
            print(f"demo: {exc}", file=sys.stderr)
            return 1
        if isinstance(exc, RuntimeError):  # the fake vendor failed to start, or its process ended mid-run
            print(f"demo: cannot finish: {exc}", file=sys.stderr)
            return 1
        raise
    code, verdict = _verdict(report)
    footer = []
    if args.record:
        footer.append(f"event record: {args.record} — {report.events:,} events, then the vendor's "
                      f"{sum(report.requests_by_vendor.values()):,} requests as it recorded them, then a summary line "
                      "(JSON lines)")
        if report.explanation is not None:
            footer.append(f"  the explained run's events: grep '\"run_id\": \"{report.explanation.run_id}\"' "
                          f"{args.record}")
    footer.extend(verdict)
    view.summary(report, footer)
    return code


def report_json(report: FleetReport) -> str:
    """The report as one JSON document (what the ``demo.summary`` record line holds)."""
    return json.dumps(report.as_dict(), default=str)
