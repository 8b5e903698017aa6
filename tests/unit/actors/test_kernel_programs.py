"""Property: random programs of spawns, asks, tells, stops and time, run on a real Runtime, keep the kernel's promises.

A program (drawn by hypothesis) spawns a few actors — ``concurrency`` 1 or more, a small or the default
mailbox, a failure policy, direct or not, ``on_start`` / ``on_stop`` hooks that may sleep or raise — and runs
a few senders against them: asks (with and without a timeout, or cancelled by a ``move_on_after``), tells,
``try_tell``, ``rt.stop``, ``rt.stats()`` and virtual sleeps.  A handler answers at once, sleeps, raises,
waits on an event the program sets later, or asks / tells another actor (or itself).  The runtime is left
when the senders are done, or sooner, with asks still in flight.  Then (``docs/actors.md``):

* every ask ends — no hang (the whole program runs under a virtual ``fail_after``) — in its answer, or in a
  typed error: ``AskTimeout`` (asked with a timeout, raised at its deadline), ``ActorStopped`` (the actor is
  stopped by then), the handler's own exception, or the cancellation its asker asked for; an ``on_start``'s
  exception never reaches an asker; an answer its handler gave before the asker's deadline is never lost;
* a handler asking its own ``concurrency=1`` actor gets ``ActorDeadlockError``, never a silent wait;
* one sender's messages to a ``concurrency=1`` actor are handled in send order; no actor ever runs more
  handlers at once than its ``concurrency``; no message is handled twice;
* ``on_stop`` runs exactly once for every incarnation whose ``on_start`` completed (or that has none), and
  never for another;
* restarts respect ``max_restarts`` within ``restart_window``; an escalation leaves ``async with`` bare;
* after the exit ``rt.stats()`` reports nothing live, no task is left (asyncio: ``all_tasks()``), and no
  warning (a ``ResourceWarning``, a coroutine never awaited) nor unraisable exception was produced.

Runs on virtual time on both backends, 60 programs each (a few seconds).  Raise the budget locally with the
environment: ``KERNEL_PROGRAM_EXAMPLES=2500 pytest -p no:timeout -n 0 tests/unit/actors/test_kernel_programs.py``
(about ten minutes; ``-p no:timeout`` lifts the suite's per-test timeout).  What it found is pinned, program by
shrunk program, in ``test_kernel_program_findings.py``.
"""

from __future__ import annotations

import gc
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import pytest
import sniffio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors.actors import ActorRef, Runtime
from agentactors.errors import ActorDeadlockError, ActorStopped, AskTimeout
from agentactors.testing import VirtualTimeLoop

EXAMPLES = int(os.environ.get("KERNEL_PROGRAM_EXAMPLES", "60"))
HANG = 5_000.0  # virtual seconds: a program that has not ended by then hangs
INNER_TIMEOUT = 400.0  # a handler's own asks (a concurrency>1 actor asking itself with every slot busy would wait)
EVENTS = 3


class Boom(Exception):
    """What a handler raises."""


class StartBoom(Exception):
    """What an ``on_start`` raises: never an asker's to see."""


class StopBoom(Exception):
    """What an ``on_stop`` raises."""


# -- programs --------------------------------------------------------------------------------------------------

leaf = st.one_of(
    st.just(("answer",)),
    st.tuples(st.just("sleep"), st.sampled_from([0.0, 0.5, 2.0, 10.0])),
    st.just(("raise",)),
    st.tuples(st.just("wait"), st.integers(0, EVENTS - 1)),
)
behaviour = st.one_of(
    leaf,
    leaf,
    st.just(("stop_itself",)),  # rt.stop(own ref, drain=False) from the handler: the handler is cancelled
    st.tuples(st.just("ask"), st.integers(0, 3), leaf),  # the target: this actor or one after it (no cycles)
    st.tuples(st.just("tell"), st.integers(0, 3), leaf),
)


@attrs.frozen
class ActorSpec:
    concurrency: int
    mailbox: int
    policy: str
    direct: bool
    on_start: str | None
    on_stop: str | None
    max_restarts: int
    window: float


actor_specs = st.builds(
    ActorSpec,
    concurrency=st.sampled_from([1, 1, 2, 3]),
    mailbox=st.sampled_from([1, 2, 256]),
    policy=st.sampled_from(["resume", "resume", "restart", "restart", "stop", "escalate"]),
    direct=st.booleans(),
    on_start=st.sampled_from([None, None, "ok", "sleep", "raise_first", "raise"]),
    on_stop=st.sampled_from([None, "ok", "sleep", "raise", "long"]),
    max_restarts=st.integers(0, 3),
    window=st.sampled_from([5.0, 60.0]),
)

actor_index = st.integers(0, 3)
op = st.one_of(
    st.tuples(st.just("ask"), actor_index, behaviour, st.sampled_from([None, None, 0.25, 1.0, 5.0])),
    st.tuples(st.just("cancel_ask"), actor_index, behaviour, st.sampled_from([0.0, 0.25, 1.0, 5.0])),
    st.tuples(st.just("tell"), actor_index, behaviour),
    st.tuples(st.just("try_tell"), actor_index, behaviour),
    st.tuples(st.just("stop"), actor_index, st.booleans(), st.sampled_from([None, 0.5, 5.0])),
    st.tuples(st.just("stats"),),
    st.tuples(st.just("sleep"), st.sampled_from([0.0, 0.5, 3.0, 20.0])),
)


@attrs.frozen
class Program:
    actors: list[ActorSpec]
    senders: list[list[tuple[Any, ...]]]
    event_times: list[float]
    exit_after: float | None  # None: when the senders are done; else leave the runtime then (asks in flight)
    drain_timeout: float


programs = st.builds(
    Program,
    actors=st.lists(actor_specs, min_size=1, max_size=4),
    senders=st.lists(st.lists(op, max_size=8), min_size=1, max_size=3),
    event_times=st.lists(st.sampled_from([0.0, 1.0, 4.0, 30.0]), min_size=EVENTS, max_size=EVENTS),
    exit_after=st.sampled_from([None, None, 0.0, 1.0, 6.0]),
    drain_timeout=st.sampled_from([0.5, 5.0, 100.0]),
)


# -- what a run records ----------------------------------------------------------------------------------------


@attrs.define(eq=False)
class Msg:
    id: int
    sender: int | None  # a driver sender, or None (a handler's own message)
    seq: int
    behaviour: tuple[Any, ...]


@attrs.define(eq=False)
class Incarnation:
    actor: int
    number: int
    started: bool = False  # on_start returned (or there is none: the first incarnation is started at spawn)
    handled: bool = False  # a handler of it ran (so it had started)
    stop_calls: int = 0


@attrs.define
class Record:
    refs: list[ActorRef] = attrs.Factory(list)
    specs: list[ActorSpec] = attrs.Factory(list)
    events: list[anyio.Event] = attrs.Factory(list)
    incarnations: list[list[Incarnation]] = attrs.Factory(list)
    restart_times: list[list[float]] = attrs.Factory(list)
    running: list[int] = attrs.Factory(list)  # handlers running now, per actor
    peak: list[int] = attrs.Factory(list)
    entered: list[tuple[int, Msg]] = attrs.Factory(list)  # (actor, message) as handlers start
    returned_at: dict[int, float] = attrs.Factory(dict)  # message id -> when its handler returned
    outcomes: dict[int, tuple[str, Any]] = attrs.Factory(dict)  # driver ask id -> (kind, detail)
    # ask id -> (message, actor, deadline, when its asker cancels it)
    asks: dict[int, tuple[Msg, int, float | None, float | None]] = attrs.Factory(dict)
    problems: list[str] = attrs.Factory(list)
    stopped_by_program: set[int] = attrs.Factory(set)
    told: list[tuple[int, int]] = attrs.Factory(list)  # (actor, message id) of every tell that was queued
    idle_checked: bool = False
    exiting: bool = False
    escalated: bool = False  # an escalating actor failed: the runtime is being cancelled
    escalated_early: bool = False  # ... before the runtime's exit began: its error must leave `async with`
    ids: int = 0

    def new_msg(self, sender: int | None, seq: int, behaviour: tuple[Any, ...]) -> Msg:
        self.ids += 1
        return Msg(self.ids, sender, seq, behaviour)


def make_actor_class(rec: Record, index: int, spec: ActorSpec) -> Callable[[], Any]:
    """The factory of actor ``index``: each call an incarnation, recorded."""

    class Handler:
        def __init__(self) -> None:
            number = len(rec.incarnations[index])
            self.inc = Incarnation(index, number, started=spec.on_start is None and number == 0)
            rec.incarnations[index].append(self.inc)
            if self.inc.number:
                rec.restart_times[index].append(anyio.current_time())

        async def receive(self, msg: Msg) -> Any:
            rec.entered.append((index, msg))
            self.inc.handled = True
            rec.running[index] += 1
            rec.peak[index] = max(rec.peak[index], rec.running[index])
            try:
                answer = await run_behaviour(rec, index, spec, msg)
            except Boom:
                if spec.policy == "escalate":
                    rec.escalated = True
                    rec.escalated_early |= not rec.exiting
                raise
            finally:
                rec.running[index] -= 1
            rec.returned_at[msg.id] = anyio.current_time()
            return answer

    async def on_start(self: Any) -> None:
        kind = spec.on_start
        if kind == "sleep":
            await anyio.sleep(1.0)
        elif kind == "raise" or (kind == "raise_first" and self.inc.number == 0):
            await anyio.lowlevel.checkpoint()
            if spec.policy == "escalate":
                rec.escalated = True
                rec.escalated_early |= not rec.exiting
            raise StartBoom()
        self.inc.started = True

    async def on_stop(self: Any) -> None:
        self.inc.stop_calls += 1
        kind = spec.on_stop
        if kind == "sleep":
            await anyio.sleep(0.5)
        elif kind == "long":
            await anyio.sleep(500.0)
        elif kind == "raise":
            raise StopBoom()

    if spec.on_start is not None:
        Handler.on_start = on_start  # type: ignore[attr-defined]
    if spec.on_stop is not None:
        Handler.on_stop = on_stop  # type: ignore[attr-defined]
    return Handler


async def run_behaviour(rec: Record, index: int, spec: ActorSpec, msg: Msg) -> Any:
    b = msg.behaviour
    kind = b[0]
    if kind == "answer":
        return ("ok", msg.id)
    if kind == "sleep":
        await anyio.sleep(b[1])
        return ("ok", msg.id)
    if kind == "raise":
        await anyio.lowlevel.checkpoint()
        raise Boom(msg.id)
    if kind == "wait":
        await rec.events[b[1]].wait()
        return ("ok", msg.id)
    if kind == "stop_itself":
        await rec.refs[index].runtime.stop(rec.refs[index], drain=False)
        await anyio.lowlevel.checkpoint()  # (cancelled by then: the stop halted this very handler)
        rec.problems.append(f"actor {index}: a handler that stopped its actor ran on")
        return ("ok", msg.id)
    target = min(index + b[1], len(rec.refs) - 1)
    ref = rec.refs[target]
    inner = rec.new_msg(None, 0, b[2])
    if kind == "ask":
        try:
            got = await ref.ask(inner, timeout=INNER_TIMEOUT)
            outcome: Any = ("answer", got)
        except (Boom, ActorStopped, AskTimeout, ActorDeadlockError) as exc:
            outcome = type(exc).__name__
        if target == index and spec.concurrency == 1 and outcome not in ("ActorDeadlockError",):
            rec.problems.append(f"actor {index} (concurrency=1) asking itself got {outcome!r}, not ActorDeadlockError")
        return ("ok", msg.id, outcome)
    try:
        await ref.tell(inner)
        rec.told.append((target, inner.id))
    except ActorDeadlockError:
        if not (target == index and spec.concurrency == 1):
            rec.problems.append(f"actor {index} telling actor {target} got ActorDeadlockError")
    return ("ok", msg.id)


# -- the driver ------------------------------------------------------------------------------------------------


async def sender(rec: Record, rt: Runtime, number: int, script: list[tuple[Any, ...]]) -> None:
    for seq, step in enumerate(script):
        kind = step[0]
        if kind in ("ask", "cancel_ask", "tell", "try_tell"):
            index = min(step[1], len(rec.refs) - 1)
            ref = rec.refs[index]
            msg = rec.new_msg(number, seq, step[2])
        if kind == "ask":
            timeout = step[3]
            deadline = None if timeout is None else anyio.current_time() + timeout
            rec.asks[msg.id] = (msg, index, deadline, None)
            rec.outcomes[msg.id] = await asking(rec, ref, index, msg, timeout)
        elif kind == "cancel_ask":
            rec.asks[msg.id] = (msg, index, None, anyio.current_time() + step[3])
            with anyio.move_on_after(step[3]) as scope:
                rec.outcomes[msg.id] = await asking(rec, ref, index, msg, None)
            if scope.cancelled_caught:
                rec.outcomes[msg.id] = ("cancelled", anyio.current_time())
        elif kind == "tell":
            await ref.tell(msg)
            rec.told.append((index, msg.id))
        elif kind == "try_tell":
            if ref.try_tell(msg):
                rec.told.append((index, msg.id))
        elif kind == "stop":
            index = min(step[1], len(rec.refs) - 1)
            rec.stopped_by_program.add(index)
            await rt.stop(rec.refs[index], drain=step[2], timeout=step[3])
            if not rec.refs[index].stopped:
                rec.problems.append(f"actor {index} not stopped after rt.stop() returned")
        elif kind == "stats":
            stats = rt.stats()
            if min(stats.tasks, stats.busy, stats.queued, stats.actors) < 0:
                rec.problems.append(f"negative stats {stats}")
            if stats.busy > sum(s.concurrency for s in rec.specs):
                rec.problems.append(f"more busy handlers than slots: {stats}")
        else:
            await anyio.sleep(step[1])


async def asking(rec: Record, ref: ActorRef, index: int, msg: Msg, within: float | None) -> tuple[str, Any]:
    try:
        got = await ref.ask(msg, timeout=within)
    except AskTimeout:
        return ("timeout", anyio.current_time())
    except ActorStopped:
        if not (ref.stopped or rec.exiting or rec.escalated):
            rec.problems.append(f"ask {msg.id} got ActorStopped from actor {index}, which is not stopped")
        return ("stopped", anyio.current_time())
    except Boom as exc:
        return ("boom", exc.args[0])
    if got[:2] != ("ok", msg.id):
        rec.problems.append(f"ask {msg.id} answered {got!r}: another message's answer")
    return ("ok", anyio.current_time())


async def run_program(program: Program) -> Record:
    rec = Record()
    escaped: BaseException | None = None
    with anyio.fail_after(HANG):
        async with anyio.create_task_group() as outer:
            rec.events = [anyio.Event() for _ in range(EVENTS)]

            async def set_later(event: anyio.Event, at: float) -> None:
                await anyio.sleep(at)
                event.set()

            for event, at in zip(rec.events, program.event_times, strict=True):
                outer.start_soon(set_later, event, at)
            try:
                async with Runtime(drain_timeout=program.drain_timeout) as rt:
                    for index, spec in enumerate(program.actors):
                        rec.incarnations.append([])
                        rec.restart_times.append([])
                        rec.running.append(0)
                        rec.peak.append(0)
                        rec.specs.append(spec)
                        rec.refs.append(
                            rt.spawn(
                                make_actor_class(rec, index, spec),
                                mailbox_size=spec.mailbox,
                                concurrency=spec.concurrency,
                                on_failure=spec.policy,  # type: ignore[arg-type]
                                max_restarts=spec.max_restarts,
                                restart_window=spec.window,
                                direct=spec.direct,
                            )
                        )
                    done = anyio.Event()
                    left = [len(program.senders)]

                    async def one(number: int, script: list[tuple[Any, ...]]) -> None:
                        try:
                            await sender(rec, rt, number, script)
                        finally:
                            left[0] -= 1
                            if not left[0]:
                                done.set()

                    # The senders live outside the runtime: leaving it early leaves their asks in flight.
                    for number, script in enumerate(program.senders):
                        outer.start_soon(one, number, script)
                    try:
                        if program.exit_after is None:
                            await done.wait()
                            # Everything ends (events are set by then): quiet, and every tell queued to an
                            # actor still open was handled (rejected only by a stop).
                            await rt.wait_idle()
                            stats = rt.stats()
                            if (stats.tasks, stats.busy, stats.queued) != (0, 0, 0):
                                rec.problems.append(f"not quiet once idle: {stats}")
                            handled = {msg.id for _, msg in rec.entered}
                            for index, msg_id in rec.told:
                                if not rec.refs[index].stopped and msg_id not in handled:
                                    rec.problems.append(f"tell {msg_id} to open actor {index} was never handled")
                            rec.idle_checked = True
                        else:
                            await anyio.sleep(program.exit_after)
                    finally:
                        rec.exiting = True
            except (Boom, StartBoom) as exc:
                escaped = exc
            rec.exiting = True
            stats = rt.stats()
            # An on_stop that a stop() from a sender runs is cut off by the exit, and ends in that sender's task.
            elsewhere = any(program.actors[i].on_stop in ("sleep", "long") for i in rec.stopped_by_program)
            if (stats.tasks, stats.busy, stats.queued) != (0, 0, 0) or (stats.actors and not elsewhere):
                rec.problems.append(f"live after the exit: {stats}")
        if rt.stats().actors:
            rec.problems.append(f"live once the senders ended: {rt.stats()}")
    escalating = any(s.policy == "escalate" for s in program.actors)
    if escaped is not None and not escalating:
        rec.problems.append(f"{escaped!r} left the runtime, but no actor escalates")
    if rec.escalated_early and escaped is None:
        rec.problems.append("an actor escalated its failure, and `async with Runtime()` raised nothing")
    if sniffio.current_async_library() == "asyncio":
        import asyncio

        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if others:
            rec.problems.append(f"tasks left after the exit: {others}")
    return rec


# -- the checks ------------------------------------------------------------------------------------------------


def check(program: Program, rec: Record) -> None:
    problems = list(rec.problems)
    # Every ask ended, in something it may end in.
    for ask_id, (msg, index, deadline, cancel_at) in rec.asks.items():
        outcome = rec.outcomes.get(ask_id)
        if outcome is None:
            problems.append(f"ask {ask_id} to actor {index} never ended")
            continue
        kind, detail = outcome
        returned = rec.returned_at.get(ask_id)
        if kind == "boom" and msg.behaviour[0] != "raise":
            problems.append(f"ask {ask_id} raised Boom, but its handler does not raise")
        if kind == "timeout":
            if deadline is None:
                problems.append(f"ask {ask_id} without a timeout raised AskTimeout")
            elif detail != pytest.approx(deadline):
                problems.append(f"ask {ask_id} timed out at {detail}, its deadline was {deadline}")
        if kind == "cancelled" and cancel_at is None:
            problems.append(f"ask {ask_id} was cancelled, though nobody cancelled it")
        # An answer given before the asker gave up is never lost.
        if returned is not None and kind != "ok":
            limit = deadline if deadline is not None else cancel_at
            if limit is None or returned < limit:
                problems.append(f"ask {ask_id}: its handler answered at {returned}, the asker got {outcome}")
    # No message handled twice; one sender's messages in order at a concurrency=1 actor.
    seen: set[int] = set()
    order: dict[tuple[int, int], list[int]] = {}
    for index, msg in rec.entered:
        if msg.id in seen:
            problems.append(f"message {msg.id} handled twice")
        seen.add(msg.id)
        if msg.sender is not None and program.actors[index].concurrency == 1:
            order.setdefault((index, msg.sender), []).append(msg.seq)
    for (index, who), seqs in order.items():
        if seqs != sorted(seqs):
            problems.append(f"sender {who}'s messages to actor {index} handled out of order: {seqs}")
    for index, spec in enumerate(program.actors):
        if rec.peak[index] > spec.concurrency:
            problems.append(f"actor {index} ran {rec.peak[index]} handlers at once (concurrency={spec.concurrency})")
        for inc in rec.incarnations[index]:
            if spec.on_stop is None:
                continue
            # A restart's incarnation without on_start is started once the old one's on_stop is over (a restart
            # cut short there never starts it): started for sure once it handled a message.
            expected = 1 if inc.started or inc.handled else 0
            unsure = spec.on_start is None and inc.number > 0 and not inc.handled
            if inc.stop_calls != expected and not (unsure and inc.stop_calls == 1):
                problems.append(
                    f"actor {index} incarnation {inc.number} (started={inc.started}): "
                    f"on_stop ran {inc.stop_calls} times"
                )
        times = rec.restart_times[index]
        if spec.policy != "restart" and times:
            problems.append(f"actor {index} ({spec.policy}) was restarted")
        for i, t in enumerate(times):
            within = [u for u in times[: i + 1] if t - u < spec.window]
            if len(within) > spec.max_restarts:
                problems.append(
                    f"actor {index}: {len(within)} restarts within {spec.window}s (max_restarts={spec.max_restarts})"
                )
                break
    assert not problems, "\n".join(problems)


def run_on(backend: str, program: Program) -> None:
    options: dict[str, Any]
    if backend == "trio":
        options = {"clock": trio.testing.MockClock(autojump_threshold=0)}
    else:
        options = {"loop_factory": VirtualTimeLoop}
    unraisable: list[Any] = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec = anyio.run(run_program, program, backend=backend, backend_options=options)
            gc.collect()
    finally:
        sys.unraisablehook = old_hook
    check(program, rec)
    assert not [str(w.message) for w in caught], "warnings"
    assert not [repr(u.exc_value) for u in unraisable], "unraisable exceptions"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(program=programs)
def test_random_programs_keep_the_kernels_promises(backend: str, program: Program) -> None:
    run_on(backend, program)
