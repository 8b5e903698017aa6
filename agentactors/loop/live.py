"""A run as an actor: :class:`RunActor`, the control messages it takes, and :class:`RunState`.

Every run of the loop that has a runtime is a :class:`RunActor` spawned by the kernel in that runtime
(``quiet``: its ``run.*`` events say what an ``actor.*`` pair would).  Its body is the run itself: the
run's task holds a handler slot of it through the run's frame (:func:`~agentactors.actors.frame.hold`),
so the run's steps are that handler — run in the run's own task (no task, no message per run), counted
busy by ``rt.stats()``, cancelled by ``rt.stop(ref)`` (the run then ends as an actor that was stopped)
and waited for by a drain.  The actor is spawned when the run starts (or when it is first addressed)
and stopped when it ends.  What a run costs for being live is a registration by id: a run nobody can
address before it starts (no stream, no recorder) registers itself as a :class:`LatentRun` and its
:class:`RunActor` — ~0.19 KB every waiting run would hold (W3) — is made when it is first needed
(:func:`live_run`: a handle found by ``rt.run_ref``; an approval waited for in place).  Nothing is
awaited for it on the way of a run nobody addresses.

Control messages — :class:`Steer`, :class:`Interrupt`, :class:`Approve`, :class:`Deny`, :class:`Inspect`
— are asks to the same actor from other tasks (the run's handle, ``rt.run_ref(run_id)``): the actor
has room for them beside its body, so each is handled directly in its sender's task and only leaves a
note in the actor (its inbox).  The loop reads the inbox at its step boundaries — no lock, no extra
task, one attribute check per step:

* steers (``steers``), in order: each taken once, as a user message after the step's tool results,
  before the next model call (``run.steered``);
* an interrupt (``interrupted``): the run ends after the step it is in;
* decisions for the calls the run waits on in place (:meth:`RunActor.decide`: ``@tool(approval="wait")``).

A finished run answers every control message with :class:`~agentactors.errors.RunFinishedError`
(:class:`Inspect` excepted: a finished run still says where it ended).  Live runs are found by id
through :func:`live_run` (and all of them through :func:`each_live_run`) in :func:`live_runs`, a service of
the runtime; the agent layer turns a :class:`RunActor` into the handle users hold.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import anyio
import attrs

from ..actors.frame import Frame, hold, release
from ..actors.runtime import ActorRef, Runtime
from ..errors import CallNotPendingError, RunDeadlineExceeded, RunFinishedError, RunInterruptedError
from ..messages import Message, ToolCall, Usage
from ..redaction import redact
from ..tools.approval import pending_reason
from ..tools.results import ToolResult
from .pause import bounded_reason, denial_reason
from .state import LoopState

__all__ = [
    "Approve",
    "Deny",
    "Inspect",
    "Interrupt",
    "LatentRun",
    "RunActor",
    "RunState",
    "Steer",
    "each_live_run",
    "live_run",
    "live_runs",
    "register_latent",
    "unregister_latent",
    "waits_in_place",
]

log = logging.getLogger("agentactors.loop")

#: Handler slots of a run's actor: its body plus the control messages being handled at the same moment.
_SLOTS = 1_000_000
_RUNS_KEY = ("agentactors.loop.live", "runs")


# -- the messages ------------------------------------------------------------------------------------


def _steerable(_: Any, __: Any, message: Any) -> None:
    """A steer's message is one the conversation can take where a steer goes: after the step's tool results.

    A tool result nobody called for, or an assistant message making calls no result answers, is a conversation
    every vendor refuses: taken, the run would fail at its next model call, far from the cause.  An empty one (no
    text, no part — a send pressed on an empty box) says nothing, yet could cost a model call: one arriving while
    the model writes its final answer makes the run take another step to read it (``agent.run("")`` is refused
    too).
    """
    if not isinstance(message, Message):
        raise TypeError(f"a steer is a Message, not {type(message).__name__}")
    if message.role == "tool":
        raise ValueError("a steer cannot be a tool message: a tool result answers a call the model made")
    if message.tool_calls:
        raise ValueError("a steer cannot be an assistant message with tool calls: no result would answer them")
    if not message.content and not message.parts:
        raise ValueError("a steer cannot be empty: it says nothing to the model (give it text or content parts)")


def _reason(_: Any, __: Any, reason: Any) -> None:
    if not isinstance(reason, str):
        raise TypeError(f"a denial's reason is a str, not {type(reason).__name__}")


def _call_id(_: Any, __: Any, call_id: Any) -> None:
    if not isinstance(call_id, str):
        raise TypeError(f"a call id is a str, not {type(call_id).__name__}")


@attrs.frozen(slots=True)
class Steer:
    """A user message for the run, taken at its next step boundary (after the step's tool results).

    :raises TypeError: not a :class:`~agentactors.messages.Message`.
    :raises ValueError: a tool message, or an assistant message with tool calls (see :func:`_steerable`).
    """

    message: Message = attrs.field(validator=_steerable)


@attrs.frozen(slots=True)
class Interrupt:
    """End the run after the step it is in: no further model call; running tools finish."""

    reason: str | None = None


@attrs.frozen(slots=True)
class Approve:
    """Approve a call the run waits on (``@tool(approval="wait")``): it runs.

    :raises TypeError: a ``call_id`` that is not a str.
    """

    call_id: str = attrs.field(validator=_call_id)


@attrs.frozen(slots=True)
class Deny:
    """Deny a call the run waits on: it is answered ``denied`` with ``reason``; the run goes on.

    :raises TypeError: a ``call_id`` or a ``reason`` that is not a str.
    """

    call_id: str = attrs.field(validator=_call_id)
    reason: str = attrs.field(default="denied by a person", validator=_reason)


@attrs.frozen(slots=True)
class Inspect:
    """Ask for the run's :class:`RunState`."""


@attrs.frozen(slots=True)
class RunState:
    """Where a live run stands: ``run.state()``.

    :ivar run_id: the run's id.
    :ivar step: the step it is in (numbered from 1, as its events number them).
    :ivar pending: the calls waiting for a person's decision in place (``approval="wait"``), in call order.
    :ivar usage: tokens used so far — the current step's model reply and delegated runs included.
    :ivar agent: the name of the agent answering now (after a handoff, the target).
    :ivar finished: whether the run has ended.
    """

    run_id: str | None
    step: int
    pending: tuple[ToolCall, ...]
    usage: Usage
    agent: str | None
    finished: bool = False


class _Waiting:
    """A call the run waits on in place: its decision, once given (``True`` or a reason to deny)."""

    __slots__ = ("call", "decision", "timeout")

    def __init__(self, call: ToolCall, timeout: float | None) -> None:
        self.call = call
        self.timeout = timeout
        self.decision: bool | str | None = None


# -- the actor -------------------------------------------------------------------------------------------


class LatentRun(Protocol):
    """A live run registered without its :class:`RunActor` (none was needed yet): :meth:`run_actor` makes it.

    It leaves the registry when it ends (never there finished), or when its actor takes its place.
    """

    @property
    def state(self) -> LoopState:
        """The run's state (what its actor's :attr:`RunActor.state` will be)."""
        ...

    def run_actor(self) -> RunActor:
        """The run's actor: made (and, the run started, started: registered in its place) on first call."""
        ...


def live_run(rt: Runtime, run_id: str) -> RunActor | None:
    """The live run ``run_id`` of ``rt`` as an actor (made now for a :class:`LatentRun`), or ``None``."""
    entry = live_runs(rt).get(run_id)
    if entry is None or isinstance(entry, RunActor):
        return entry
    return entry.run_actor()


def each_live_run(rt: Runtime) -> list[RunActor]:
    """Every live run of ``rt`` as an actor (made now for each :class:`LatentRun`)."""
    return [entry if isinstance(entry, RunActor) else entry.run_actor() for entry in list(live_runs(rt).values())]


def register_latent(rt: Runtime, run_id: str, run: LatentRun) -> None:
    """``run`` starts in ``rt`` without its actor: found by ``run_id`` from now on (:func:`live_run`)."""
    last = _last_runs  # (live_runs' own first look, here: every run starts, one call less each)
    runs = last[1] if last is not None and last[0] is rt else live_runs(rt)
    runs[run_id] = run


def unregister_latent(rt: Runtime, run_id: str, run: LatentRun) -> None:
    """``run``, registered by :func:`register_latent` and still without an actor, ended: it leaves the live runs."""
    last = _last_runs
    runs = last[1] if last is not None and last[0] is rt else live_runs(rt)
    if runs.get(run_id) is run:
        del runs[run_id]


def live_runs(rt: Runtime) -> dict[str, RunActor | LatentRun]:
    """The runtime's live runs by id (a service of ``rt``): each a :class:`RunActor`, or a :class:`LatentRun`
    whose actor was not needed yet (read them through :func:`live_run` and :func:`each_live_run`).

    The last runtime's registry is kept here too, until that runtime exits: every run registers and
    leaves, so the service is looked up once per runtime (and per switch between runtimes), not twice
    per run.
    """
    last = _last_runs
    if last is not None and last[0] is rt:
        return last[1]
    runs: dict[str, RunActor | LatentRun] = rt.service(_RUNS_KEY, dict, cleanup=_forget)
    _remember(rt, runs)
    return runs


#: The registry :func:`live_runs` gave last, and its runtime (forgotten when that runtime exits).
_last_runs: tuple[Runtime, dict[str, RunActor | LatentRun]] | None = None


def _remember(rt: Runtime, runs: dict[str, RunActor | LatentRun]) -> None:
    global _last_runs
    _last_runs = (rt, runs)


async def _forget(runs: dict[str, RunActor | LatentRun]) -> None:
    """The runtime whose registry ``runs`` is exits: it is not kept here (nor alive) any longer."""
    global _last_runs
    last = _last_runs
    if last is not None and last[1] is runs:
        _last_runs = None


class RunActor:
    """One run, as an actor (see the module): its inbox of control messages, and its place among live runs.

    :param run_id: the run's id.
    :param state: the run's :class:`~agentactors.loop.state.LoopState` (read for :class:`RunState`, its sink
        for the events of control messages).
    """

    __slots__ = (
        "_done",
        "_held",
        "_rt",
        "_runs",
        "cancelled",
        "frame",
        "halted",
        "handle",
        "interrupted",
        "ref",
        "result",
        "run_id",
        "state",
        "steers",
        "waiting",
        "wake",
    )

    def __init__(self, run_id: str | None, state: LoopState) -> None:
        self.run_id = run_id
        self.state = state
        self.ref: ActorRef | None = None
        self.steers: list[Message] | None = None
        self.interrupted: Interrupt | None = None
        self.waiting: dict[str, _Waiting] | None = None
        self.wake: anyio.Event | None = None  # set by a decision or an interrupt while the run waits on calls
        self.result: Any = None  # the run's result, once it ended (False: it raised or was cancelled)
        self.handle: Callable[[], Any] | None = None  # a weak reference to the agent layer's handle, once made
        self.frame: Frame | None = None  # the run's frame while it runs (what cancel() cancels)
        self.cancelled = False
        self.halted = False  # its actor was stopped while the run ran (rt.stop(ref), the runtime's exit)
        self._runs: dict[str, RunActor | LatentRun] | None = None
        self._rt: Runtime | None = None
        self._held = False
        self._done: anyio.Event | None = None

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def was_stopped(self) -> bool:
        """Whether the run's actor was stopped while the run ran (``rt.stop(ref)``, the runtime's exit): known as
        soon as it is, so the run's outcome can be made before it ends (:meth:`end`) and retires."""
        ref = self.ref
        return self.halted or (ref is not None and ref.stopped)

    # -- life ------------------------------------------------------------------------------------------

    def start(self, rt: Runtime, frame: Frame, *, spawn: bool) -> None:
        """The run starts in ``rt`` (``frame`` is the run's): registered among the live runs, and spawned as
        an actor now when ``spawn`` — else when it is first addressed (:meth:`activate`)."""
        self.frame = frame
        self._rt = rt
        if self.run_id is not None:
            last = _last_runs  # (live_runs' own first look, here: every run starts, one call less each)
            runs = self._runs = last[1] if last is not None and last[0] is rt else live_runs(rt)
            runs[self.run_id] = self
        if spawn:
            self.activate()

    def announce(self, rt: Runtime) -> None:
        """Found by its id among ``rt``'s live runs from now on (``rt.run_ref``), before the run starts: a stream's
        handle has its id at once — one handed to a client that steers through another request must find the run,
        not ``RunNotFoundError`` until the run's task first runs.  :meth:`start` registers it again; :meth:`end`
        removes it (also for a run that never started)."""
        if self.run_id is not None and self._runs is None and not self.finished:
            runs = self._runs = live_runs(rt)
            runs[self.run_id] = self

    def activate(self) -> ActorRef | None:
        """The run's actor, spawned on first use while the run runs (``None`` before it starts or once it ended).

        The run's task then holds a handler slot of it through the run's frame
        (:func:`~agentactors.actors.frame.hold`): the run is that handler — busy in ``rt.stats()``,
        waited for by a drain, cancelled by ``rt.stop(ref)``.
        """
        ref = self.ref
        if ref is not None or self.finished or self.frame is None or self._rt is None:
            return ref
        ref = self.ref = self._rt.spawn(self, name=self.run_id or "run", concurrency=_SLOTS, quiet=True)
        self._held = hold(self.frame, ref)
        return ref

    def end(self, result: Any) -> ActorRef | None:
        """The run ended with ``result`` (``None``: it raised — its caller's cancellation, a halt of its actor): it
        leaves the live runs, and its waiters wake to ``result``.  A run cut short by its frame's own cancellation
        (its handle's :meth:`cancel`, its deadline) ends here with the result the loop makes of that, never ``None``.

        :returns: its actor, when it was spawned: the caller stops it (:meth:`retire`).
        """
        self.result = result if result is not None else False
        if self.steers:
            self._unread(result)
        if self._done is not None:
            self._done.set()
        if self._runs is not None:
            self._runs.pop(self.run_id, None)  # type: ignore[arg-type]
        ref = self.ref
        if ref is None:
            self.frame = None
        return ref

    def _unread(self, result: Any, why: str | None = None) -> None:
        """The run ended with steers it never took (it failed, was interrupted, raised or was cancelled, or had
        no step left under ``max_steps``): they were accepted, so their loss is recorded, never silent —
        ``run.steers_unread`` (``count``; ``reason``: ``max_steps``, ``failed``, ``interrupted``, ``paused``,
        ``deadline``, ``stopped`` or ``ended``) and a warning in the log."""
        steers, self.steers = self.steers or [], None
        why = why or (
            # It raised (its caller's cancellation, a halt of its actor), or was cancelled through a handle — a
            # stream's or rt.run_ref's: the one ends it as the caller's cancellation, the other with its result.
            "stopped" if result is None or result.cancelled
            else "deadline" if isinstance(result.error, RunDeadlineExceeded)  # (bounded too, with an answer so far)
            else "max_steps" if result.bounded
            else "interrupted" if isinstance(result.error, RunInterruptedError)
            else "paused" if result.paused
            else "failed" if not result.ok
            # An answer the run ended on while an interrupt waited: the interrupt kept it from going on.
            else "interrupted" if self.interrupted is not None
            else "ended"
        )
        sink = self.state.sink
        if sink is not None:
            sink.emit("run.steers_unread", count=len(steers), reason=why)
        log.warning(
            "run %s ended (%s) with %d steer(s) it never took: the model did not read them", self.run_id, why,
            len(steers),
        )

    async def retire(self, rt: Runtime, ref: ActorRef) -> None:
        """Stop the run's actor ``ref`` once the run ended (:meth:`end`), giving back the slot the run held.

        Cancellation: nothing here waits (the run's own handler has returned), so a cancelled run retires whole.
        """
        frame, self.frame = self.frame, None
        if ref is not None:
            self.halted = ref.stopped  # not by us: we stop it below
            if self._held and frame is not None:
                release(frame, ref)
            self.ref = None  # the actor's cell holds this object: no cycle left for the collector to find
            await rt.stop(ref, drain=False)

    def cancel(self) -> None:
        """Cancel the run where it stands (its frame): it ends with ``RunResult(cancelled=True)``."""
        frame = self.frame
        if frame is not None and not self.finished:
            self.cancelled = True
            frame.scope.cancel()

    async def wait_finished(self) -> None:
        """Wait until the run has ended.

        Cancellation: the waiter leaves; the run is not affected.
        """
        if self.finished:
            return
        if self._done is None:
            self._done = anyio.Event()
        await self._done.wait()

    async def receive(self, message: Any) -> Any:
        """A control message (see :meth:`control`).  The run's steps are this actor's other handler: the
        run's task holds a slot for them (:func:`~agentactors.actors.frame.hold`), no message carries them.

        Cancellation: nothing to cancel: the message is handled at once, with no await.
        """
        return self.control(message)

    # -- control messages ------------------------------------------------------------------------------

    def control(self, message: Any) -> Any:
        """Handle a control message now: note it in the inbox for the loop's next boundary.

        :raises RunFinishedError: the run has ended (except for :class:`Inspect`).
        :raises CallNotPendingError: an :class:`Approve` / :class:`Deny` for a call the run does not wait on.
        :raises TypeError: not a control message.
        """
        kind = type(message)
        if kind is Inspect:
            return self.snapshot()
        if kind not in (Steer, Interrupt, Approve, Deny):
            raise TypeError(f"a run takes Steer, Interrupt, Approve, Deny or Inspect, not {kind.__name__}")
        if self.finished:
            raise RunFinishedError(f"run {self.run_id!r} has finished", run_id=self.run_id)
        sink = self.state.sink
        if kind is Steer:
            if self.steers is None:
                self.steers = []
            self.steers.append(message.message)
            if sink is not None:
                sink.emit("run.steer_received", chars=len(message.message.content), queued=len(self.steers))
            return None
        if kind is Interrupt:
            if self.interrupted is None:
                # Bounded and printable, as a denial's reason (it ends in the error and the records); redacted there.
                reason = bounded_reason(message.reason) if message.reason is not None else None
                self.interrupted = message if reason == message.reason else Interrupt(reason or None)
                if sink is not None:
                    sink.emit("run.interrupt_received", reason=None if reason is None else redact(reason))
                self._wake()
            return None
        waiting = self.waiting.get(message.call_id) if self.waiting is not None else None
        if waiting is None or waiting.decision is not None:
            pending = [w.call.id for w in self.waiting.values() if w.decision is None] if self.waiting else []
            raise CallNotPendingError(
                f"call {message.call_id!r} is not awaiting approval in run {self.run_id!r} (pending: {pending})",
                call_id=message.call_id,
            )
        if kind is Approve:
            waiting.decision = True
            if sink is not None:
                sink.emit("run.approved", call_id=message.call_id, name=waiting.call.name)
        else:
            # As a resume's decisions are (check_decisions): printable, bounded — a pasted document or a client
            # sending megabytes went whole into the conversation and the records.  The model reads it redacted
            # (tools.approval.decision_denied_text); so do the records.
            waiting.decision = reason = denial_reason(message.reason)
            if sink is not None:
                sink.emit("run.denied", call_id=message.call_id, name=waiting.call.name, reason=redact(reason))
        self._wake()
        return None

    def _wake(self) -> None:
        if self.wake is not None:
            self.wake.set()

    def snapshot(self) -> RunState:
        """The run's :class:`RunState` now."""
        state = self.state
        waiting = self.waiting
        pending = tuple(w.call for w in waiting.values() if w.decision is None) if waiting else ()
        return RunState(
            self.run_id, max(state.steps, 1), pending, state.total_usage(), state.config.agent_name, self.finished
        )

    # -- what the loop reads at its boundaries --------------------------------------------------------

    def take_steers_into(self, state: LoopState, count: int | None = None) -> list[Message] | None:
        """The steers received since the last boundary, in order, into the conversation (each taken once).

        ``count``: take only the first ``count`` of them, the others wait for a later boundary — a journaled run
        serving its recorded steps takes there only the steers its recording handed back (the first ones:
        :meth:`~agentactors.loop.tape.Tape.boundary`); ``None``: all of them.

        :returns: the steers taken (what a journaled run commits with its next model response), or ``None``.
        """
        steers = self.steers
        if count is not None and steers is not None and count < len(steers):
            steers, self.steers = steers[:count], steers[count:]
        else:
            self.steers = None
        if not steers:
            return None
        sink = state.sink
        for message in steers:
            state.append(message)
            if sink is not None:
                sink.emit("run.steered", text=message.content)
        log.debug("run %s: %d steer(s) taken after step %d", self.run_id, len(steers), state.steps)
        return steers

    def goes_on(self, ended: Any, max_steps: int, recorded: bool = False) -> bool:
        """Whether a run whose step just ended it on an answer goes on instead: steers wait for the model.

        Only a run that ended well (its answer the last message, nothing failed, paused or interrupted)
        and has a step left under ``max_steps``; the steers are then taken at the boundary that follows, so
        the model reads its answer and them.  With no step left the answer stands — going on would only end
        the run ``bounded``, its answer no longer ``ok`` — and the steers are recorded unread (``max_steps``).

        ``recorded``: the answer was served from a recording that goes on past it (a recovered run: a steer came
        during that call, and the recording's next steps read it).  An interrupt then does not stop the run here —
        it waits for the first live boundary (:meth:`~agentactors.loop.tape.Tape.boundary`), as it does at every
        recorded boundary: ended on a superseded answer, the run would drop the recorded steps (and a call a crash
        cut, never run again) and leave a journal no replay can follow.
        """
        if self.steers is None or (self.interrupted is not None and not recorded) or not ended.ok:
            return False
        conversation = self.state.conversation
        if not conversation or conversation[-1].role not in ("assistant", "tool") or (
            conversation[-1].role == "assistant" and conversation[-1].tool_calls
        ):
            return False
        if self.state.steps >= max_steps:
            self._unread(ended, "max_steps")
            return False
        return True

    async def decide(
        self, calls: Sequence[tuple[ToolCall, float | None]], reasons: Mapping[str, str]
    ) -> dict[str, bool | str]:
        """Wait in place for a decision on each of ``calls`` (``(call, timeout)``): ``{call_id: True | reason}``.

        A call without a decision within its timeout is denied with a reason saying so; an interrupt
        denies every call still undecided.  ``reasons``: why each call waits (in ``run.awaiting_approval``).

        Cancellation: propagates (the run is cancelled while it waits); nothing is decided.
        """
        waiting = self.waiting = {call.id: _Waiting(call, timeout) for call, timeout in calls}
        sink = self.state.sink
        if sink is not None:
            sink.emit(
                "run.awaiting_approval",
                calls=[{"call_id": c.id, "name": c.name, "reason": reasons.get(c.id, "")} for c, _ in calls],
            )
        start = anyio.current_time()
        try:
            while self.interrupted is None:
                undecided = [w for w in waiting.values() if w.decision is None]
                if not undecided:
                    break
                timeouts = [w.timeout for w in undecided if w.timeout is not None]
                wake = self.wake = anyio.Event()
                if not timeouts:
                    await wake.wait()
                    continue
                # Deadlines, not elapsed times: ``now - start >= timeout`` can stay false at ``start + timeout``
                # (float rounding), and the wait, already past its deadline, then spun without end on a clock
                # that does not move by itself (virtual time).
                with anyio.move_on_at(start + min(timeouts)):
                    await wake.wait()
                now = anyio.current_time()
                for w in undecided:
                    if w.decision is None and w.timeout is not None and now >= start + w.timeout:
                        w.decision = f"no decision within {w.timeout:g}s"
                        if sink is not None:
                            sink.emit("run.approval_timed_out", call_id=w.call.id, name=w.call.name, timeout=w.timeout)
        finally:
            self.wake = None
            self.waiting = None
        decisions: dict[str, bool | str] = {}
        for call_id, w in waiting.items():
            decisions[call_id] = w.decision if w.decision is not None else "the run was interrupted before a decision"
        return decisions


def waits_in_place(tools: Any, results: Sequence[ToolResult]) -> list[tuple[str, float | None, str]] | None:
    """``(call_id, timeout, reason)`` of each pending call among ``results`` when every one waits in place.

    A call waits in place when its tool says ``approval="wait"`` (``@tool``); ``None`` when any pending
    call's tool does not (the default ``"pause"``, a policy's :class:`~agentactors.tools.approval.NeedsApproval`
    on such a tool, an executor this layer cannot read): the step then pauses the run as before.
    """
    actor = getattr(tools, "actor", None)
    if actor is None:  # a journaled run asks through a taped reference (agentactors.loop.tape): its executor's within
        actor = getattr(getattr(tools, "ref", None), "actor", None)
    table = getattr(actor, "tools", None)
    if not isinstance(table, Mapping):
        return None
    waits: list[tuple[str, float | None, str]] = []
    for result in results:
        if not result.awaiting_approval:
            continue
        found = table.get(result.name)
        if found is None or getattr(found, "approval", "pause") != "wait":
            return None
        waits.append((result.call_id, found.approval_timeout, pending_reason(result)))
    return waits or None
