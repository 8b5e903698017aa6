"""The fake vendor's state: scripts, routes, faults, outages and the record of requests.

Shared between the caller's thread (which scripts and inspects) and the server
thread (which answers), so every access goes through one lock.  Nothing here
does I/O.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ._fake_default import default_reply
from ._fake_script import (
    WIRES,
    Action,
    FakeError,
    FakeReply,
    FaultKind,
    FaultPlan,
    RecordedRequest,
    ScriptItem,
    as_action,
)

__all__ = ["WIRES", "Exchange", "Outage", "VendorState"]

#: Every wire the fake serves (Azure's routes speak ``openai`` / ``responses``, Vertex's ``gemini`` / ``anthropic``).

log = logging.getLogger("agentactors.testing.fakevendor")

_Key = tuple[str, str | None]  # ("model", name) | ("wire", name) | ("any", None)


def _check_model(model: object) -> None:
    """A model is named by a non-empty str: another value matched no request (the route or outage was dead)."""
    if model is None:
        return
    if not isinstance(model, str):
        raise TypeError(f"model must be a str or None, not {type(model).__name__}")
    if not model:
        raise ValueError("model must be a non-empty str (None: any model)")


class Outage:
    """A window during which every request to a wire and/or model fails (503, or 529 on Anthropic).

    Returned by :meth:`FakeVendor.outage`; end it with :meth:`end` or use it as a
    context manager (``with fv.outage(wire="anthropic"): ...``).  With a
    ``duration`` it also ends by itself.
    """

    def __init__(self, *, wire: str | None, model: str | None, duration: float | None, status: int | None) -> None:
        """Raises ``TypeError`` / ``ValueError`` for what no outage can be: the server built its error answer
        from ``status`` only on a request (a status of 200 became an empty 500 and a request pending for ever),
        a ``duration`` of NaN ended the outage before it began, and an unknown wire or a model that is no str
        matched no request, silently."""
        VendorState.key(wire, None)
        _check_model(model)
        if duration is not None:
            if isinstance(duration, bool) or not isinstance(duration, int | float):
                raise TypeError(f"an outage duration must be a number of seconds, not {type(duration).__name__}")
            if not duration >= 0:  # NaN too
                raise ValueError(f"an outage duration must be >= 0 seconds, not {duration!r}")
        if status is not None:
            if isinstance(status, bool) or not isinstance(status, int):
                raise TypeError(f"an outage status must be an int, not {type(status).__name__}")
            if not 400 <= status <= 599:
                raise ValueError(f"an outage status must be an HTTP error status (400-599), not {status!r}")
        self.wire = wire
        self.model = model
        self.status = status
        self._until = None if duration is None else time.monotonic() + duration
        self._ended = False

    @property
    def active(self) -> bool:
        return not self._ended and (self._until is None or time.monotonic() < self._until)

    def end(self) -> None:
        """End the outage now (idempotent)."""
        self._ended = True

    def matches(self, wire: str, model: str | None) -> bool:
        return (self.wire is None or self.wire == wire) and (self.model is None or self.model == model)

    def __enter__(self) -> Outage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()

    def __repr__(self) -> str:
        return f"Outage(wire={self.wire!r}, model={self.model!r}, active={self.active})"


@attrs.define(slots=True)
class Exchange:
    """The server's mutable bookkeeping for one request (snapshotted into a frozen RecordedRequest)."""

    request: RecordedRequest
    status: int | None = None
    outcome: str = "pending"
    disconnected: bool = False
    fault: str | None = None
    finishing: bool = False  # the last byte is being sent: a disconnect now is the normal end
    completed_at: float | None = None

    def snapshot(self) -> RecordedRequest:
        return attrs.evolve(
            self.request,
            status=self.status,
            outcome=self.outcome,
            disconnected=self.disconnected,
            fault=self.fault,
            completed_at=self.completed_at,
        )


class VendorState:
    """Everything a FakeVendor knows, behind one lock."""

    def __init__(
        self,
        *,
        latency: float,
        auto_tools: bool | int,
        chunk_latency: float = 0.0,
        faults: FaultPlan | None,
        max_records: int | None,
    ) -> None:
        self._lock = threading.Lock()
        self.latency = latency
        #: Seconds after each streamed content chunk, for answers that set no ``chunk_latency`` of their own.
        self.chunk_latency = chunk_latency
        self.auto_tools = auto_tools
        self._faults = faults
        self._rng = random.Random(faults.seed if faults else None)
        self._records: deque[Exchange] = deque(maxlen=max_records)
        self._count = 0
        self._queues: dict[_Key, deque[Action]] = {}
        self._routes: dict[_Key, Callable[[RecordedRequest], Any] | Action] = {}
        self._outages: list[Outage] = []
        self.handler_errors: list[BaseException] = []
        self.outcomes: dict[str, int] = {}
        self.faults_injected: dict[str, int] = {}

    # -- configuration ----------------------------------------------------------------------------

    @staticmethod
    def key(wire: str | None, model: str | None) -> _Key:
        if wire is not None and model is not None:
            raise ValueError("route by wire or by model, not both")
        if model is not None:
            _check_model(model)
            return ("model", model)
        if wire is not None:
            if wire not in WIRES:
                raise ValueError(f"wire must be one of {', '.join(map(repr, WIRES))}, not {wire!r}")
            return ("wire", wire)
        return ("any", None)

    def enqueue(self, items: Iterable[ScriptItem], key: _Key) -> None:
        actions = [as_action(i) for i in items]  # validate before anything is queued
        with self._lock:
            self._queues.setdefault(key, deque()).extend(actions)

    def set_route(self, key: _Key, target: Callable[[RecordedRequest], Any] | ScriptItem | None) -> None:
        with self._lock:
            if target is None:
                self._routes.pop(key, None)
            else:
                self._routes[key] = target if callable(target) else as_action(target)

    @property
    def faults(self) -> FaultPlan | None:
        return self._faults

    @faults.setter
    def faults(self, plan: FaultPlan | None) -> None:
        rng = random.Random(plan.seed if plan else None)  # before anything is set: a seed it refuses changes nothing
        with self._lock:
            self._faults, self._rng = plan, rng

    def add_outage(self, outage: Outage) -> Outage:
        with self._lock:
            self._outages = [o for o in self._outages if o.active]
            self._outages.append(outage)
        return outage

    def end_outages(self) -> None:
        with self._lock:
            for o in self._outages:
                o.end()
            self._outages.clear()

    def pending(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def clear(self) -> None:
        with self._lock:
            self._queues.clear()
            self._routes.clear()
            self._records.clear()
            self.handler_errors.clear()
            self.outcomes.clear()
            self.faults_injected.clear()
            for o in self._outages:
                o.end()
            self._outages.clear()

    # -- the record -------------------------------------------------------------------------------

    def next_index(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def record(self, request: RecordedRequest) -> Exchange:
        ex = Exchange(request)
        with self._lock:
            self._records.append(ex)
        return ex

    def finish(self, ex: Exchange, *, outcome: str, status: int | None = None) -> None:
        with self._lock:
            if ex.completed_at is not None:
                return
            ex.outcome = outcome
            if status is not None:
                ex.status = status
            ex.completed_at = time.monotonic()
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def mark_disconnected(self, ex: Exchange) -> None:
        with self._lock:
            if ex.completed_at is not None or ex.finishing:
                return
            ex.disconnected = True
        self.finish(ex, outcome="disconnected")

    def snapshots(self) -> tuple[RecordedRequest, ...]:
        with self._lock:
            return tuple(ex.snapshot() for ex in self._records)

    # -- deciding an answer -----------------------------------------------------------------------

    def decide(self, req: RecordedRequest, ex: Exchange) -> Action:
        """The answer to ``req``: outage, then queued items (model, wire, any), then a random
        fault, then routes (model, wire, any), then the default behaviour."""
        wire, model = req.wire, req.model
        keys: list[_Key] = [("model", model), ("wire", wire), ("any", None)] if model else [("wire", wire),
                                                                                           ("any", None)]
        with self._lock:
            for outage in self._outages:
                if outage.active and outage.matches(wire, model):
                    ex.fault = "outage"
                    status = outage.status or (529 if wire == "anthropic" else 503)
                    return FakeError(status, message="The service is temporarily unavailable (outage).")
            for key in keys:
                queue = self._queues.get(key)
                if queue:
                    return queue.popleft()
            plan = self._faults
            fault: FaultKind | None = None
            if plan is not None and plan.applies_to(wire, model) and self._rng.random() < plan.rate:
                kinds = list(plan.weights)
                fault = self._rng.choices(kinds, weights=[plan.weights[k] for k in kinds])[0]
                self.faults_injected[fault.value] = self.faults_injected.get(fault.value, 0) + 1
                ex.fault = fault.value
            route = next((self._routes[k] for k in keys if k in self._routes), None)
        if plan is not None and fault is not None:
            if fault is FaultKind.rate_limit:
                return FakeError(429, retry_after=plan.retry_after)
            if fault is FaultKind.server_error:
                return FakeError(500)
            if fault is FaultKind.overloaded:
                return FakeError(529 if wire == "anthropic" else 503)
        action = self._routed(route, req)
        if fault is FaultKind.timeout and plan is not None:
            base = action if isinstance(action, FakeReply) else FakeReply(text="(late answer)")
            return attrs.evolve(base, latency=plan.hang)
        if fault is FaultKind.disconnect and plan is not None:
            base = action if isinstance(action, FakeReply) else FakeReply(text="(cut answer)")
            return attrs.evolve(base, cut_after=plan.cut_after)
        return action

    def _routed(self, route: Callable[[RecordedRequest], Any] | Action | None, req: RecordedRequest) -> Action:
        if route is not None and not callable(route):
            return as_action(route)
        if route is not None:
            try:
                item = route(req)
            except Exception as exc:  # a broken handler is a test bug: make it loud, keep serving
                log.exception("FakeVendor handler failed for request #%d", req.index)
                with self._lock:
                    self.handler_errors.append(exc)
                return FakeError(500, message=f"FakeVendor handler failed: {type(exc).__name__}: {exc}",
                                 should_retry=False)
            if item is not None:
                try:
                    return as_action(item)
                except TypeError as exc:
                    with self._lock:
                        self.handler_errors.append(exc)
                    return FakeError(500, message=f"FakeVendor handler returned an invalid item: {exc}",
                                     should_retry=False)
        return default_reply(req.conversation, auto_tools=self.auto_tools)
