"""The demo's numbers and its one explained run, computed from what the fleet recorded.

Nothing here is hard-coded: every figure comes from the runs' results, the
recorded events, or the vendor's request log.  "Primary calls while its breaker
was open" compares the send time stamped on every request the primary received
(the client's ``anyio.current_time()``, the clock events carry) with the open
intervals read from ``breaker.state_changed`` events.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..errors import StreamInterruptedError
from ..events import Event
from ..explain import Explanation, explain
from ..messages import Usage
from ..pricing import Cost
from ..redaction import redact
from .chain import RUN_HEADER, SENT_AT_HEADER
from .fleet import FleetRun, TaskOutcome
from .tasks import answer_quotes_results

__all__ = ["FleetReport", "RunExplanation", "analyze", "open_intervals", "percentile"]


@attrs.frozen(slots=True)
class RunExplanation:
    """One run that failed over: the API's :class:`~agentactors.explain.Explanation` of it, with what only
    the demo knows — the vendor's own log of the run's HTTP requests, and the run it re-ran."""

    explanation: Explanation
    http: tuple[str, ...] = ()
    rerun_of: str | None = None

    @property
    def run_id(self) -> str:
        return self.explanation.run_id

    @property
    def failovers(self) -> tuple[str, ...]:
        return self.explanation.failovers

    def lines(self) -> list[str]:
        """The explanation as plain text lines: the API's, with the demo's two additions spliced in."""
        out = self.explanation.lines()
        if self.rerun_of:
            out.insert(2, f"  a re-run: its first run, {self.rerun_of}, was cut mid-stream")
        if self.http:
            at = next((i for i, line in enumerate(out) if line.startswith("  the request that produced")), len(out))
            out[at:at] = ["  its HTTP requests, as the vendor recorded them:", *(f"    {line}" for line in self.http)]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


@attrs.frozen(slots=True)
class FleetReport:
    """What a fleet run achieved.  Latencies in seconds; counts are exact.

    ``ok`` runs ended on an answer; ``bounded`` ones stopped at a step limit (or
    kept a partial answer); ``failed`` ones produced nothing.  ``verified`` of
    the ok runs quote both tool results of their own task; ``wrong`` do not.
    ``primary_calls_while_open`` counts requests the primary received that its
    client sent while the primary's breaker was open (must be 0);
    ``unstamped_primary_calls`` those that could not be checked (must be 0 too);
    ``retries_stopped_by_breaker`` the retries (any member) that sent no further
    attempt because their member's breaker opened while they waited
    (``retry.exhausted`` with reason ``circuit_open``).
    """

    agents: int
    ok: int
    failed: int
    bounded: int
    failures: Mapping[str, int]
    verified: int
    wrong: int
    p50: float
    p99: float
    wall: float
    retries: int
    failovers: Mapping[str, int]
    failover_paths: Mapping[str, int]
    breaker_opens: int
    breaker_transitions: Mapping[str, int]
    primary_calls_while_open: int
    unstamped_primary_calls: int
    primary_calls: int
    retries_stopped_by_breaker: int
    tokens: Usage
    requests_by_vendor: Mapping[str, int]
    outcomes_by_vendor: Mapping[str, Mapping[str, int]]
    faults_injected: Mapping[str, int]
    interrupted_streams: int
    reruns: int
    reruns_ok: int
    streamed_runs: int
    streamed_chars: int
    events: int
    outages: tuple[tuple[float, float], ...]  # the primary's, seconds after the fleet started
    open_intervals: tuple[tuple[float, float], ...]  # seconds after the fleet started
    explanation: RunExplanation | None
    record: str | None
    live: bool
    fault_rate: float
    #: What the fleet cost: its runs' ``RunResult.cost`` added up (the priced ones), and how many had no price.
    cost: float | None = None
    currency: str = "USD"
    unpriced_runs: int = 0
    #: The first failed run's error as its text (already free of credentials, as every provider error is), cut to
    #: :data:`FAILURE_CHARS`: when no run answered (a ``--live`` run with a refused key, no route to the vendor) it
    #: says why, which ``failures`` (counts by type and kind) does not.
    first_failure: str | None = None

    @property
    def goodput(self) -> float:
        """Share of tasks that ended on a verified answer."""
        return self.verified / self.agents if self.agents else 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly view (for benchmarks and the event record's summary line)."""
        out = attrs.asdict(self, recurse=True)
        out["explanation"] = self.explanation.lines() if self.explanation is not None else None
        out["goodput"] = self.goodput
        return out


# --- helpers -------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in [0, 100]); ``nan`` for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _state(value: Any) -> str:
    return str(getattr(value, "value", value))


def _member_of(key: Any) -> str:
    return str(key[0]) if isinstance(key, tuple) and key else str(key)


def open_intervals(events: Iterable[Event], key: Any, end: float = math.inf) -> list[tuple[float, float]]:
    """The ``[opened, left_open)`` intervals of the breaker circuit ``key``, from its state changes."""
    out: list[tuple[float, float]] = []
    opened: float | None = None
    for e in events:
        if e.type != "breaker.state_changed" or e.get("key") != key:
            continue
        to, frm = _state(e.get("to_state")), _state(e.get("from_state"))
        if to in ("open", "forced_open") and opened is None:
            opened = e.time
        elif frm in ("open", "forced_open") and opened is not None:
            out.append((opened, e.time))
            opened = None
    if opened is not None:
        out.append((opened, end))
    return out


def _inside(t: float, intervals: Sequence[tuple[float, float]]) -> bool:
    return any(start <= t < stop for start, stop in intervals)


#: How much of the first failure's text the summary shows (an AllProvidersFailedError holds every member's).
FAILURE_CHARS = 600


def _failure_text(error: Any) -> str:
    """``error``'s own words on one line, at most :data:`FAILURE_CHARS` characters."""
    # Redacted, whatever it is: a provider's error is free of credentials already, a failure of another kind may not be.
    text = " ".join(redact(str(error)).split()) or type(error).__name__
    if not text.startswith(type(error).__name__):
        text = f"{type(error).__name__}: {text}"
    return text if len(text) <= FAILURE_CHARS else text[: FAILURE_CHARS - 1] + "…"


def _error_text(error: Any) -> str:
    if error is None:
        return "?"
    if isinstance(error, StreamInterruptedError):
        return "StreamInterruptedError (cut after its first event)"
    status = getattr(error, "status", None)
    kind = getattr(getattr(error, "kind", None), "value", None)
    name = type(error).__name__
    parts = [name]
    if status is not None:
        parts.append(f"HTTP {status}")
    if kind and name != "CircuitOpenError":
        parts.append(str(kind))
    return " ".join(parts)


# --- the explained run -----------------------------------------------------------------------------


def _pick(outcomes: Sequence[TaskOutcome], by_run: Mapping[str, list[Event]]) -> TaskOutcome | None:
    """The run to explain: an ok run that failed over — preferring one that also retried, streamed and met
    an open breaker, and one that was not a re-run — or, when none failed over, the first ok run."""
    best: tuple[int, int] | None = None
    chosen = None
    for o in outcomes:
        r = o.result
        if r is None or not r.ok or r.run_id is None:
            continue
        events = by_run.get(r.run_id, [])
        reasons = {_state(e.get("reason")) for e in events if e.type == "fallback.moved"}
        score = (
            16 * bool(reasons)
            + 4 * answer_quotes_results(r.content, r.messages)
            - 8 * (o.reruns > 0)  # a re-run's story starts in another run: prefer one that is whole
            + 2 * ("transient" in reasons)
            + 2 * ("circuit_open" in reasons)
            + any(e.type == "retry.scheduled" for e in events)
            + o.streamed
        )
        if best is None or (score, -o.task.index) > best:
            best, chosen = (score, -o.task.index), o
    return chosen


def _http_lines(run_id: str, requests: Sequence[Any], start: float) -> list[str]:
    lines = []
    for r in requests:
        if r.headers.get(RUN_HEADER) != run_id:
            continue
        sent = r.headers.get(SENT_AT_HEADER)
        at = f"+{float(sent) - start:6.3f}s" if sent else "      ?"
        status = r.status if r.status is not None else "-"
        fault = f" [{r.fault}]" if r.fault else ""
        mode = "stream" if r.stream else "json"
        lines.append(f"{at} request #{r.index} to {r.endpoint} ({mode}) → {status} {r.outcome}{fault}")
    return lines


def _explain(outcome: TaskOutcome, events: Sequence[Event], requests: Sequence[Any]) -> RunExplanation:
    r = outcome.result
    assert r is not None and r.run_id is not None
    start = events[0].time if events else 0.0  # run.started: every time shown is relative to it
    explanation = attrs.evolve(
        explain(r, events),
        agent=f"agent-{outcome.task.index:04d}",
        question=outcome.task.prompt,
        streamed=outcome.streamed,
        latency=outcome.latency,
    )
    http = tuple(_http_lines(r.run_id, requests, start))
    return RunExplanation(explanation, http=http, rerun_of=outcome.first_run_id)


# --- the report --------------------------------------------------------------------------------------


def analyze(fleet: FleetRun, *, record: str | None = None) -> FleetReport:
    """Compute the :class:`FleetReport` of ``fleet``."""
    outcomes = fleet.outcomes
    events = fleet.events
    ok = bounded = failed = verified = 0
    failures: Counter[str] = Counter()
    first_failure: str | None = None
    for o in outcomes:
        r = o.result
        if r is not None and r.ok:
            ok += 1
            verified += answer_quotes_results(r.content, r.messages)
        elif r is not None and r.bounded:
            bounded += 1
        else:
            failed += 1
            error = r.error if r is not None else o.error
            failures[_error_text(error)] += 1
            if first_failure is None and error is not None:
                first_failure = _failure_text(error)
    latencies = [o.latency for o in outcomes]

    by_run: dict[str, list[Event]] = {}
    failovers: Counter[str] = Counter()
    paths: Counter[str] = Counter()
    transitions: Counter[str] = Counter()
    tokens = Usage()
    retries = opens = interrupted = stopped = 0
    for e in events:
        if e.run_id is not None:
            by_run.setdefault(e.run_id, []).append(e)
        kind = e.type
        if kind == "retry.scheduled":
            retries += 1
        elif kind == "retry.exhausted":
            stopped += e.get("reason") == "circuit_open"
        elif kind == "fallback.moved":
            failovers[_state(e.get("reason"))] += 1
            paths[f"{e.get('from_member')} → {e.get('to_member')}"] += 1
        elif kind == "breaker.state_changed":
            to = _state(e.get("to_state"))
            transitions[f"{_member_of(e.get('key'))}: {_state(e.get('from_state'))} → {to}"] += 1
            opens += to == "open"
        elif kind == "run.finished":
            usage = e.get("usage")
            if isinstance(usage, Usage):
                tokens = tokens + usage
            if type(e.get("error")).__name__ == "StreamInterruptedError":
                interrupted += 1

    primary = fleet.members[0]
    key = primary.breaker.key_for(primary.model)
    intervals = open_intervals(events, key, end=math.inf)
    requests = fleet.vendor_requests
    while_open = unstamped = primary_calls = 0
    by_vendor: Counter[str] = Counter()
    outcomes_by_vendor: dict[str, Counter[str]] = {}
    if not fleet.live:
        for req in requests:
            # By endpoint, not by the fake's wire: an Azure deployment speaks the primary's wire.
            by_vendor[req.endpoint] += 1
            outcomes_by_vendor.setdefault(req.endpoint, Counter())[req.outcome] += 1
            if req.endpoint != primary.wire:
                continue
            primary_calls += 1
            sent = req.headers.get(SENT_AT_HEADER)
            if sent is None:
                unstamped += 1
            elif _inside(float(sent), intervals):
                while_open += 1
    else:  # no server-side record of a real vendor: the client's own log is what there is
        for wire, sent_at, _ in fleet.client_log:
            by_vendor[wire] += 1
            if wire == primary.wire:
                primary_calls += 1
                while_open += _inside(sent_at, intervals)

    started = fleet.started
    chosen = _pick(outcomes, by_run)
    explanation = None
    if chosen is not None and chosen.result is not None and chosen.result.run_id is not None:
        explanation = _explain(chosen, by_run[chosen.result.run_id], requests)
    finite_end = fleet.finished
    spent, currency, unpriced = _fleet_cost(outcomes)
    return FleetReport(
        agents=len(outcomes),
        ok=ok,
        failed=failed,
        bounded=bounded,
        failures=dict(failures.most_common()),
        first_failure=first_failure,
        verified=verified,
        wrong=ok - verified,
        p50=percentile(latencies, 50),
        p99=percentile(latencies, 99),
        wall=fleet.finished - started,
        retries=retries,
        failovers=dict(failovers.most_common()),
        failover_paths=dict(paths.most_common()),
        breaker_opens=opens,
        breaker_transitions=dict(sorted(transitions.items())),
        primary_calls_while_open=while_open,
        unstamped_primary_calls=unstamped,
        primary_calls=primary_calls,
        retries_stopped_by_breaker=stopped,
        tokens=tokens,
        requests_by_vendor=dict(sorted(by_vendor.items())),
        outcomes_by_vendor={w: dict(c.most_common()) for w, c in sorted(outcomes_by_vendor.items())},
        faults_injected=dict(fleet.vendor_stats.get("faults", {})),
        interrupted_streams=interrupted,
        reruns=sum(o.reruns for o in outcomes),
        reruns_ok=sum(1 for o in outcomes if o.reruns and o.result is not None and o.result.ok),
        streamed_runs=sum(o.streamed for o in outcomes),
        streamed_chars=fleet.streamed_chars,
        events=len(events),
        outages=tuple((a - started, b - started) for a, b in fleet.outages),
        open_intervals=tuple((a - started, min(b, finite_end) - started) for a, b in intervals),
        explanation=explanation,
        record=record,
        live=fleet.live,
        fault_rate=fleet.fault_rate,
        cost=spent,
        currency=currency,
        unpriced_runs=unpriced,
    )


def _fleet_cost(outcomes: Sequence[TaskOutcome]) -> tuple[float | None, str, int]:
    """``(the priced runs' cost added up, its currency, runs without a price)``: ``None`` when none had a price."""
    total: Cost | None = None
    unpriced = 0
    for o in outcomes:
        cost = o.result.cost if o.result is not None else None
        if cost is None:
            unpriced += o.result is not None
        else:
            total = cost if total is None else total + cost
    return (None, "USD", unpriced) if total is None else (total.total, total.currency, unpriced)
