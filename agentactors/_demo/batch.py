"""``python -m agentactors demo --batch``: the same job run live and through a :class:`~agentactors.BatchProvider`.

The job is the demo's (each agent prices an item in a currency with two tools, so each run is three model
calls), for a few hundred agents, against a :class:`~agentactors.testing.FakeVendor` on 127.0.0.1 answering as
the demo's small obedient model.  Run once live (every model call a request to Chat Completions) and once through
``BatchProvider(OpenAIProvider(...))`` — every step of every run waits in a batch (OpenAI's Files +
``/v1/batches`` API, as the FakeVendor serves it), so the job takes three batches — then the two side by side:
runs ok, answers checked, requests and batches, wall time, and ``RunResult.cost`` added up (the batch one at
the vendor's batch price, about half).  A real batch answers within minutes to hours; the fake one after a
status read or two, which is what keeps this offline demo short.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import attrs

from .._backend import run_loop
from ..actors.runtime import Runtime
from ..agent import Agent
from ..gateway.provider import ProviderActor
from ..loop.result import RunResult
from ..pricing import Cost, total_cost
from ..providers.openai.provider import OpenAIProvider
from ..resilience.batch import BatchProvider
from . import MAX_AGENTS
from .tasks import Task, answer_quotes_results, fake_model, make_catalogue, make_tasks, make_tools

__all__ = ["DEFAULT_BATCH_AGENTS", "JobReport", "run_batch_demo", "run_jobs"]

DEFAULT_BATCH_AGENTS = 200
MODEL = "gpt-4o-mini"
_KEY = "demo-batch-canary-key"  # the FakeVendor checks it; a canary: it must never show in the output


@attrs.frozen(slots=True)
class JobReport:
    """One run of the job: how its runs ended, what went to the vendor, how long it took and what it cost."""

    label: str
    runs: int
    ok: int
    verified: int
    model_calls: int
    single_requests: int
    batches: int
    batch_lines: int
    wall: float
    cost: Cost | None  # RunResult.cost added up; None when a model had no price


async def _run_job(provider: Any, tasks: Sequence[Task], tools: Sequence[Any]) -> tuple[list[RunResult[Any]], float]:
    async with Runtime() as rt:
        # Every run must be able to wait at once: the ProviderActor's bound is the batch's size.
        ref = ProviderActor.shared(rt, provider, max_concurrency=len(tasks) + 1)
        agent = Agent(ref, tools=list(tools), name="pricer", max_steps=6)
        started = anyio.current_time()
        results = await agent.run_many([t.prompt for t in tasks], runtime=rt, concurrency=len(tasks))
        wall = anyio.current_time() - started
    return results, wall


def _report(label: str, tasks: Sequence[Task], results: Sequence[RunResult[Any]], wall: float, fv: Any,
            before: int) -> JobReport:
    ok = [r for r in results if r.ok]
    submissions = fv.batches.submissions[before:]
    return JobReport(
        label=label,
        runs=len(results),
        ok=len(ok),
        verified=sum(answer_quotes_results(r.content, r.messages) for r in ok),
        model_calls=sum(sum(1 for m in r.messages if m.role == "assistant") for r in results),
        single_requests=len(fv.batches.single_requests),
        batches=len(submissions),
        batch_lines=sum(b.size for b in submissions),
        wall=wall,
        cost=total_cost(results),
    )


async def run_jobs(agents: int = DEFAULT_BATCH_AGENTS, *, seed: int = 7, window: float = 0.25,
                   poll_every: float = 0.2) -> tuple[JobReport, JobReport]:
    """The job live, then through a BatchProvider; both reports."""
    from ..testing import FakeVendor  # the [testing] extra's server, imported when the demo runs

    catalogue = make_catalogue(seed)
    tasks = make_tasks(agents, seed, catalogue)
    tools = make_tools(catalogue)
    async with FakeVendor(expected_api_key=_KEY, record_bodies=False) as fv:
        fv.on(fake_model)
        fv.batches.plan(polls=1)
        live_results, live_wall = await _run_job(OpenAIProvider(MODEL, api_key=_KEY, base_url=fv.openai_base_url),
                                                 tasks, tools)
        live = _report("live", tasks, live_results, live_wall, fv, 0)
        fv.clear()
        fv.on(fake_model)
        fv.batches.plan(polls=1)
        batched = BatchProvider(OpenAIProvider(MODEL, api_key=_KEY, base_url=fv.openai_base_url),
                                window=window, max_requests=max(agents, 1), poll_every=poll_every)
        batch_results, batch_wall = await _run_job(batched, tasks, tools)
        batch = _report("batch", tasks, batch_results, batch_wall, fv, 0)
    return live, batch


def _money(cost: Cost | None, *, short: bool = False) -> str:
    if cost is None:  # (in the table, short: the line under it says what to install)
        return "no price" if short else "no price (install the [prices] extra: genai-prices)"
    return f"{cost.total:.6f} {cost.currency}"


def comparison(live: JobReport, batch: JobReport) -> list[str]:
    """The two runs side by side, as lines."""
    share = ""
    if live.cost is not None and batch.cost is not None and live.cost.total > 0:
        share = f"  ({batch.cost.total / live.cost.total:.0%} of live)"
    rows: list[tuple[str, Callable[[JobReport], str]]] = [
        ("runs ok", lambda j: f"{j.ok:,}/{j.runs:,}"),
        ("answers checked", lambda j: f"{j.verified:,} quote their own tool results"),
        ("model calls", lambda j: f"{j.model_calls:,}"),
        ("single requests", lambda j: f"{j.single_requests:,}"),
        ("batches (lines)", lambda j: f"{j.batches:,} ({j.batch_lines:,})"),
        ("wall time", lambda j: f"{j.wall:.2f} s"),
        ("cost (RunResult.cost)", lambda j: _money(j.cost, short=True)),
    ]
    lines = [f"{'':24}{'live':<36}{'batch'}"]
    lines += [f"{name:24}{get(live):<36}{get(batch)}" for name, get in rows]
    lines.append(f"the batch job cost {_money(batch.cost)}{share}; a real batch answers within minutes to hours "
                 "(the fake one after a status read), so batch suits jobs that can wait")
    return lines


def run_batch_demo(args: argparse.Namespace) -> int:
    """``demo --batch``: 0 when every run of both jobs ended on a checked answer and the batch job used no single
    request, 1 otherwise, 2 when it cannot run."""
    agents = args.agents if args.agents is not None else DEFAULT_BATCH_AGENTS
    if not 1 <= agents <= MAX_AGENTS:  # the parser checks it; a caller's own Namespace may not have been
        print(f"demo: --agents must be within [1, {MAX_AGENTS:,}]", file=sys.stderr)
        return 2
    # Refused rather than ignored: a user asking for real vendors or injected faults must not get neither.
    ignored = [flag for flag, given in (("--live", getattr(args, "live", False)),
                                        ("--fault-rate", getattr(args, "fault_rate", None) is not None),
                                        ("--record", getattr(args, "record", None) is not None)) if given]
    if ignored:
        named = ignored[0] if len(ignored) == 1 else f"{', '.join(ignored[:-1])} and {ignored[-1]}"
        print(f"demo --batch: {named} {'does' if len(ignored) == 1 else 'do'} not apply: the batch demo runs "
              "offline against the FakeVendor, without injected faults, and writes no event record", file=sys.stderr)
        return 2
    print(f"{agents:,} agents, each pricing an item in a currency with two tools (3 model calls a run), run twice "
          f"against a FakeVendor on 127.0.0.1: live (Chat Completions), then through BatchProvider(OpenAIProvider("
          f"{MODEL!r}), window=0.25s, poll_every=0.2s) — OpenAI's Files + /v1/batches", flush=True)

    async def main() -> tuple[JobReport, JobReport]:
        return await run_jobs(agents, seed=args.seed)

    try:
        live, batch = run_loop(main, args.backend)
    except BaseException as exc:
        # Trio raises Ctrl-C's KeyboardInterrupt in whichever task was running: it may come in an ExceptionGroup.
        caught = exc.subgroup(KeyboardInterrupt) if isinstance(exc, BaseExceptionGroup) else exc
        if not isinstance(caught, (KeyboardInterrupt, BaseExceptionGroup)):
            raise
        print("demo: interrupted; every run was cancelled and the fake vendor stopped.", flush=True)
        return 130
    for line in comparison(live, batch):
        print(line)
    good = live.verified == live.runs == batch.verified == batch.runs and batch.single_requests == 0
    print("✓ every run of both jobs quotes its own tool results; the batch job sent no single request" if good
          else "✗ some runs did not end on a checked answer, or the batch job sent single requests")
    return 0 if good else 1
