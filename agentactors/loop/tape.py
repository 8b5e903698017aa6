"""Durable runs at the loop's level: a run's recorded steps served back, its live steps committed.

A runtime with a journal (``Runtime(journal=...)``, :mod:`agentactors.journal`) hands each run a
:class:`Tape` when its controller is made (:func:`open_tape`).  The tape stands between the run and its two
actors, as the references the controller asks (:meth:`Tape.seat`):

* a model call the recording holds is answered from it — no vendor call; a tool step whose results it holds
  is answered from them — no tool runs — and its ``tools.started`` / ``tools.finished`` events are told
  again (``replayed=True``);
* past the recording, the real actors are asked, and what they answer is committed through the tape's
  :class:`StepWriter` before the run goes on: a model response that asks for tools at once — its calls'
  ids, and so their idempotency keys, must survive a crash before any of them runs — a tool step's results
  once they are all in, and an answer together with the run's end (one transaction fewer: losing it costs
  one model call again, never a side effect);
* the steers a run takes at a boundary go with the next live model response's commit, and a recording's steers
  are handed back to the run's inbox (its :class:`~agentactors.loop.live.RunActor`) before the boundary they
  were taken at: a replayed, forked or recovered run reads them there, and goes on past an answer for them;
* a live steer or interrupt that reaches the run while it serves its recorded steps (a recovered run steered
  through ``rt.run_ref``) is about now, not the recorded past: it waits for the first live boundary
  (:meth:`Tape.boundary`), so the steer is committed with the first live response — as in a fresh run — and
  the recorded steps, work done, are the run's whole before an interrupt ends it.

The loop knows nothing of storage: a journal is any object with :meth:`Journal.open_run`.  A run nobody
journals pays one attribute read (``runtime.journal``) when its controller is made.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol

import anyio
import anyio.lowlevel
import attrs

from ..errors import RunInterruptedError
from ..events import current_sink
from ..gateway.provider import Complete, Stream
from ..messages import LLMResponse, Message, StreamEnd, TextDelta
from ..tools.executor import ExecuteTools
from ..tools.results import ToolResult, ToolStatus, unknown_tool_text
from .pause import PausedRun
from .result import RunResult

__all__ = ["Commit", "Ending", "Journal", "Resume", "StepWriter", "Tape", "open_tape", "resuming"]

#: A resumed run's pause and the decisions it goes on with.
Resume = tuple[PausedRun, Mapping[str, "bool | str"]]

_RESUMING: contextvars.ContextVar[Resume | None] = contextvars.ContextVar("agentactors_tape_resuming", default=None)


@attrs.frozen(slots=True)
class Ending:
    """How a run ended past its last recorded step, when that is not what its steps say: cut short from outside.

    ``how``: ``"cancelled"`` (through its handle, or by its caller) or ``"interrupted"`` (``run.interrupt()``,
    with its ``reason``).  ``between``: a cancellation that came at the boundary after the last step, before the
    next step began (else it came inside the step the recording does not hold: its model call, or its tools).

    A run served from a recording that ended so (a replay, a child served whole) ends the same way at the same
    point, instead of asking for what the recording does not hold.
    """

    how: str
    reason: str | None = None
    between: bool = False


@attrs.frozen(slots=True)
class Commit:
    """What one transaction of a journal holds (:meth:`StepWriter.commit`): all of it, or none.

    ``begin``: the run starts (its id, agent and input are the writer's already); ``responses``: model
    responses by their number in the run (the n-th model call: step n in a run of plain steps);
    ``results``: one tool step's results, with the number of the response that asked for them; ``end``:
    how the run ended — ``"finished"``, ``"paused"``, ``"raised"`` or ``"cancelled"`` — with its
    ``result`` when it has one; ``steers``: the steers the run took at the boundary before model call n, by
    that n — each committed with response n (one of ``responses``), never alone — but in the end commit, which also
    holds the steers taken before a model call that never answered (it failed, or the run was cut short in it): the
    number after the last response's, kept with the run's last response (the run went on past it, and a replay must
    too); ``ending``: with ``end``, how a run cut short from outside ended (:class:`Ending`: kept with the run's last
    response), else ``None``.
    """

    begin: bool = False
    responses: tuple[tuple[int, LLMResponse], ...] = ()
    steers: tuple[tuple[int, tuple[Message, ...]], ...] = ()
    results: tuple[int, tuple[ToolResult, ...]] | None = None
    end: str | None = None
    result: RunResult[Any] | None = None
    ending: Ending | None = None


class StepWriter(Protocol):
    """Where a run's live steps go: one :class:`Commit` per call, applied atomically before it returns."""

    async def commit(self, commit: Commit) -> None:
        """Apply ``commit`` in one transaction: all of it, or none.

        Cancellation: the commit still happens whole or not at all; an implementation that cannot stop a
        transaction it started (the SQL journals) shields it and returns once the store said which.
        """
        ...


class Journal(Protocol):
    """What a runtime's ``journal`` must offer the loop: a tape for each run started in the runtime."""

    def open_run(
        self,
        run_id: str | None,
        agent: str | None,
        inputs: tuple[Message, ...],
        *,
        parent_run_id: str | None,
        resumed: bool,
    ) -> Tape | None:
        """The tape of a run starting now (``None``: this journal does not keep it).

        ``parent_run_id``: the run whose tool started this one (a delegated run), else ``None``;
        ``resumed``: a paused run going on with a person's decisions.
        """
        ...


def open_tape(
    runtime: Any,
    run_id: str | None,
    agent: str | None,
    inputs: Sequence[Message],
    parent: str | None,
    resume: Resume | bool | None,
) -> Tape | None:
    """The tape of a run made in ``runtime``, or ``None`` when the runtime has no journal (or it keeps no tape).

    ``resume``: a resumed run's pause and decisions (``True`` when unknown), else ``None``/``False``.  While
    the journal's ``open_run`` runs, :func:`resuming` answers them: what a journal records to recover the
    resumed run (the :class:`Journal` port itself only says ``resumed``).
    """
    journal: Journal | None = getattr(runtime, "journal", None)
    if journal is None:
        return None
    token = _RESUMING.set(resume if isinstance(resume, tuple) else None)
    try:
        tape = journal.open_run(run_id, agent, tuple(inputs), parent_run_id=parent, resumed=bool(resume))
    finally:
        _RESUMING.reset(token)
    if tape is not None and not isinstance(tape, Tape):
        # A journal of one's own that broke the port: named here, before the run starts, not as an AttributeError
        # from inside the run's controller.
        raise TypeError(
            f"{type(journal).__name__}.open_run() returned a {type(tape).__name__}, not a Tape or None "
            "(agentactors.loop.tape.Journal: docs/architecture.md)"
        )
    return tape


def resuming() -> Resume | None:
    """Inside a journal's ``open_run``: the pause and decisions of the resumed run opening, else ``None``."""
    return _RESUMING.get()


class Tape:
    """One run's recorded steps and the writer of its live ones (see the module docstring).

    :param responses: recorded model responses, served to the run's first model calls in order.
    :param results: recorded tool results by call id; a tool step all of whose calls are here is served.
    :param writer: where the run's live steps are committed, or ``None`` (a replay records nothing).
    :param label: an event to emit at the run's first model call (``("run.forked", {...})``: the run says
        what it goes on from), or ``None``.
    :param guard: called before a tool step the recording does not hold runs live; it raises to forbid
        it (a replay runs no tool), or ``None``.
    :param sealed: the guard is called before a model call past the recording too, instead of asking the seat's
        provider — whichever agent answers, a handoff's target included (a delegated child served whole on its
        parent's recovery: nothing of it is committed, so nothing past its rows may run; a replay: no model is
        asked).  Only a recording that ended cancelled is not refused there: it is cancelled at that call.
    :param run_id: the id the run takes instead of a new one (a recovered run keeps its own), or ``None``.
    :param steers: the recorded steers by the number of the model call they were taken before (1: the run's
        first), or ``None``: handed to the run's inbox (:meth:`attach`) once the call before that one was served,
        so the run takes them at the same boundary — and goes on past an answer for them — as it did.
    :param ending: how the recorded run ended past its last step when it was cut short from outside (cancelled,
        interrupted: :class:`Ending`), or ``None``.  Served whole, the run ends the same way at the same point: a
        cancelled one is cancelled where the recording stops (at the model call or the tool step it does not hold,
        or at the boundary after its last step), an interrupted one ends interrupted after its last step — no
        model is asked, no tool runs.

    Steers: a live run's steers taken at a boundary (:meth:`boundary`) are committed with the next live model
    response, in its transaction; a crash before it loses them with that step, which is asked again without them.
    One arriving while recorded steps are served waits for the first live boundary (:meth:`boundary`).
    """

    __slots__ = (
        "_handed", "_home", "_inbox", "_label", "_pending", "_responses", "_results", "_steered", "_steers", "_step",
        "asked", "calls", "ending", "failure", "guard", "run_id", "sealed", "writer",
    )

    def __init__(
        self,
        responses: Sequence[LLMResponse] = (),
        results: Mapping[str, ToolResult] | None = None,
        writer: StepWriter | None = None,
        *,
        label: tuple[str, Mapping[str, Any]] | None = None,
        guard: Callable[[], None] | None = None,
        run_id: str | None = None,
        steers: Mapping[int, Sequence[Message]] | None = None,
        ending: Ending | None = None,
        sealed: bool = False,
    ) -> None:
        self.run_id = run_id
        self.sealed = sealed
        #: How the recorded run ended past its steps (see the class), or ``None``.
        self.ending = ending
        self._home: Any = None  # the run's runtime, where its live run is found (a tape with an ending only)
        self._steers = {n: tuple(m) for n, m in steers.items() if m} if steers else None
        self._inbox: Any = None  # the run's RunActor, once attached (a run with recorded steers only)
        self._handed = 0  # recorded steers handed to the inbox and not taken yet: the first ones there
        self._steered: dict[int, tuple[Message, ...]] | None = None  # live steers by the call they precede
        self._responses = tuple(responses)
        self.guard = guard
        self._results = dict(results or {})
        self.writer = writer
        self._label = label
        #: Model calls answered so far (recorded and live): the number of the last response.
        self.calls = 0
        #: The number of the last model call asked past the recording (0: none): a run cancelled with no call asked
        #: past its last response was cancelled between steps (:meth:`around`).
        self.asked = 0
        self._pending: list[tuple[int, LLMResponse]] = []  # live answers not committed yet
        #: The journal's refusal of a model response's commit (:meth:`answered`), which :meth:`around` raises.
        self.failure: Exception | None = None
        #: The last tool step's results (served or committed) with its response's number: what a second executor
        #: message of the same step (its calls decided in place) is committed together with (:meth:`ran`).
        self._step: tuple[int, tuple[ToolResult, ...]] | None = None

    @property
    def steers(self) -> Mapping[int, tuple[Message, ...]] | None:
        """The recorded steers by the model call they were taken before, or ``None`` (the run recorded none)."""
        return self._steers

    @property
    def recording_left(self) -> bool:
        """Whether the recording holds a model response past the last one served: the run goes on through it
        (:meth:`~agentactors.loop.live.RunActor.goes_on`), whatever arrived live meanwhile."""
        return self.calls < len(self._responses)

    @property
    def served_last(self) -> bool:
        """Whether the run's last model response was served from the recording: its tool calls started before (the
        recording committed them first), so an interrupt does not keep them from running (:meth:`boundary`).

        Not a recording that ended interrupted during its last model call: that response's calls never started
        (its step has no results), and the interrupt keeps them from starting again."""
        served = 0 < self.calls <= len(self._responses)
        if served and self.calls == len(self._responses) and self.ending is not None:
            return self.ending.how != "interrupted" or self._results_of_last() is not None
        return served

    def _results_of_last(self) -> tuple[ToolResult, ...] | None:
        """The recorded results of the last recorded response's calls (``None``: not all of them, or no calls)."""
        calls = self._responses[-1].tool_calls if self._responses else ()
        if not calls or any(c.id not in self._results for c in calls):
            return None
        return tuple(self._results[c.id] for c in calls)

    def attach(self, inbox: Any) -> None:
        """The run's :class:`~agentactors.loop.live.RunActor` (a run with recorded :attr:`steers`): the steers
        recorded before its first model call go to its inbox now, the others as the call before theirs is served."""
        self._inbox = inbox
        self._hand_steers(self.calls + 1)

    def _hand_steers(self, number: int) -> None:
        """The recorded steers of model call ``number`` into the run's inbox: taken at the boundary before it."""
        steers = self._steers.pop(number, None) if self._steers else None
        inbox = self._inbox
        if steers and inbox is not None:
            inbox.steers = [*steers, *(inbox.steers or ())]
            self._handed += len(steers)

    def boundary(self, inbox: Any, state: Any) -> bool:
        """A boundary of the run whose inbox (its :class:`~agentactors.loop.live.RunActor`) holds steers or an
        interrupt: take them into ``state``; ``True`` when an interrupt ends the run here.

        Before a recorded model call only the steers the recording handed back for it are taken (they were
        recorded with it): a live steer or interrupt waits in the inbox for the first live boundary.  Taken
        among recorded steps, a steer would sit where the recorded responses never read it and be journaled
        nowhere — a second recovery, a replay and a fork would run without it; an interrupt would end the run
        with recorded steps (and a call a crash cut, never run again) past its end.  Before a live call the
        inbox is read as in any run (an interrupt first), and the steers are committed with that call's response.
        """
        handed, self._handed = self._handed, 0
        number = self.calls + 1
        if number <= len(self._responses):
            if handed:
                inbox.take_steers_into(state, handed)
            return False
        if inbox.interrupted is not None:
            return True
        if self.ending is not None and self.ending.how == "interrupted" and number == len(self._responses) + 1:
            inbox.control(_interrupt(self.ending.reason))  # recorded: the run went on past an answer, then this
            return True
        steers = inbox.take_steers_into(state)
        if steers:
            if self._steered is None:
                self._steered = {}
            self._steered[number] = (*self._steered.get(number, ()), *steers)
        return False

    def seat(self, provider: Any, tools: Any) -> tuple[TapedProvider, TapedTools]:
        """The references the run asks instead of its seat's ``provider`` and ``tools`` (``None``: no tools)."""
        if self.ending is not None and self._home is None:  # (rare: a recording that ended cut short)
            self._home = getattr(provider, "runtime", None)
        return TapedProvider(provider, self), TapedTools(tools, self)

    async def around(self, run: Coroutine[Any, Any, RunResult[Any]]) -> RunResult[Any]:
        """Run ``run`` between the journal's ``begin`` and ``end`` commits.

        Errors: the end ``"raised"`` is committed shielded, then the error propagates — a run failed on purpose
        is not one a crash left unfinished.  When the begin commit itself fails, ``run`` never starts: it is
        closed and the error propagates.

        A model response whose commit failed (:attr:`failure`: a value the journal cannot store, a lost lease)
        reached the loop as its model step's failure — the loop cannot tell it from the vendor's — and the run
        ended on a failed step.  That is not how it ended: its end is committed ``"raised"`` and the journal's
        error is raised, as a refused tool step's or answer's is (no result blaming the vendor).

        Cancellation: a cancelled run's end is committed ``"cancelled"`` (shielded), then the cancellation
        propagates; a begin commit cancelled starts no run (``run`` is closed).  Cancelled during its last
        commit, after ``run`` returned, the end is journaled whole or not at all (:meth:`StepWriter.commit`):
        not, the journal holds the run unfinished, for recovery.
        """
        writer = self.writer
        if writer is None:
            return await run
        try:
            await writer.commit(Commit(begin=True))
        except BaseException:
            run.close()  # never started: closed here, not left to the collector's "never awaited" warning
            raise
        try:
            result = await run
        except BaseException as exc:
            end, ending = "raised", None
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                end, ending = "cancelled", self._cancelled()
            with anyio.CancelScope(shield=True):
                await writer.commit(
                    Commit(responses=self._take_pending(), steers=self._take_steered(True), end=end, ending=ending)
                )
            raise
        failure = self.failure
        if failure is not None:
            await self._raise_refused(writer, failure)
        end, ending = "finished", None
        if result.cancelled or result.error is not None or result.resume_state is not None:  # (the rare ends)
            end, ending = self._ended(result)
        await writer.commit(
            Commit(
                responses=self._take_pending(), steers=self._take_steered(True), end=end, result=result, ending=ending,
            )
        )
        return result

    def _ended(self, result: RunResult[Any]) -> tuple[str, Ending | None]:
        """The end a run's ``result`` is committed with, and how it was cut short (:class:`Ending`), if it was.

        Cancelled through its handle, a run returns a result: it ended ``"cancelled"`` all the same (as a run whose
        caller cancelled it).  Interrupted, it ended ``"finished"`` (an older reader sees it as before) and its
        :class:`Ending` says it was interrupted.
        """
        if result.cancelled:
            return "cancelled", self._cancelled()
        if isinstance(result.error, RunInterruptedError):
            return "finished", Ending("interrupted", reason=result.error.reason)
        return ("paused" if result.paused else "finished"), None

    def _cancelled(self) -> Ending | None:
        """A cancelled run's :class:`Ending` when it was cancelled between steps — its last response's tool step done,
        no model call asked after it (a replay must not begin a step the run never began) — else ``None``."""
        step = self._step
        if step is not None and step[0] == self.calls > 0 and self.asked <= self.calls:
            return Ending("cancelled", between=True)
        return None

    async def _raise_refused(self, writer: StepWriter, failure: Exception) -> None:
        """End the run ``"raised"`` on the journal's refusal of one of its commits, and raise that refusal."""
        with anyio.CancelScope(shield=True):
            try:
                await writer.commit(
                    Commit(responses=self._take_pending(), steers=self._take_steered(True), end="raised")
                )
            except Exception as also:  # the database, or the lease: the refusal is still what the caller sees
                if type(also) is not type(failure):
                    failure.add_note(f"and the run's end could not be journaled either ({type(also).__name__})")
        raise failure

    # -- what the taped references call -----------------------------------------------------------------

    def recorded_response(self) -> LLMResponse | None:
        """The recorded response of the next model call, or ``None`` past the recording."""
        index = self.calls
        if self._label is not None:  # the run's first model call, recorded or not (a fork at step 1 is all live)
            label, self._label = self._label, None
            sink = current_sink()
            if sink is not None:
                sink.emit(label[0], **label[1])
        if index >= len(self._responses):
            self.asked = index + 1
            if self.sealed and self.guard is not None and (self.ending is None or self.ending.how != "cancelled"):
                self.guard()  # raises: the model is not asked (a recording cancelled is cancelled here: cancel_here)
            return None
        self.calls = index + 1
        if self._steers:  # a steered recording: the next call's steers wait in the inbox for its boundary
            self._hand_steers(index + 2)
        response = self._responses[index]
        if self.ending is not None and self.calls == len(self._responses):
            self._end_after_last()
        return response

    # -- a recording that ended cut short (rare: ``ending``) ------------------------------------------------

    def _live(self) -> Any:
        """The run's live run (:class:`~agentactors.loop.live.RunActor`), or ``None`` (no runtime, no id known)."""
        if self._inbox is not None:
            return self._inbox
        if self._home is None or self.run_id is None:
            return None
        from .live import live_run  # (the rare path: a recording that ended cut short)

        return live_run(self._home, self.run_id)

    def _end_after_last(self) -> None:
        """The last recorded response was served: an interrupted recording ends the run after it — the interrupt is
        in the run's inbox now, as it was when that model call answered.  With calls, their tool step is served first
        when recorded, else (interrupted during that model call) its calls never start; without (a think-only step,
        a cut-off answer: the run went on past it), the boundary after it ends the run (:meth:`boundary`), whatever
        else waits there — the recorded run asked no model again."""
        ending = self.ending
        if ending is not None and ending.how == "interrupted":
            live = self._live()
            if live is not None and not live.finished:
                live.control(_interrupt(ending.reason))

    def served_step(self) -> None:
        """A recorded tool step was served: the last one of a recording cancelled between steps cancels the run
        now — delivered at the boundary after it, before the next step begins, as it was."""
        ending = self.ending
        if ending is not None and ending.between and self.calls == len(self._responses):
            live = self._live()
            if live is not None:
                live.cancel()

    async def cancel_here(self) -> None:
        """The run asks for what a recording that ended cancelled does not hold: it is cancelled here, as it was
        (its handle's cancellation: it ends with ``RunResult(cancelled=True)``).  Not such a recording (or its
        live run cannot be found): nothing happens, and the caller goes on as without an ending.

        Cancellation: the point of it — the run's own cancellation is raised here, at its checkpoint (the frame's
        scope absorbs it and the run returns its cancelled result); a caller's cancellation propagates the same way.
        """
        ending = self.ending
        if ending is None or ending.how != "cancelled":
            return
        live = self._live()
        if live is not None:
            live.cancel()
            await anyio.lowlevel.checkpoint()  # the cancellation, delivered here

    async def answered(self, response: LLMResponse) -> None:
        """A live model response: committed now when it asks for tools, else with the next commit.

        Cancellation: as :meth:`flush`'s (a response that asks for tools is committed at once).
        """
        self.calls += 1
        self._pending.append((self.calls, response))
        if response.tool_calls:
            try:
                await self.flush()
            except Exception as exc:  # the journal's, not the vendor's: around() raises it once the step gave up
                self.failure = exc
                raise

    async def flush(self) -> None:
        """Commit the responses not committed yet (a tool step's, before any of its calls runs).

        Cancellation: as :meth:`StepWriter.commit`'s; the responses taken for it are then not committed again.
        """
        if self._pending and self.writer is not None:
            await self.writer.commit(Commit(responses=self._take_pending(), steers=self._take_steered()))

    def recorded_results(self, message: ExecuteTools) -> tuple[ToolResult, ...] | None:
        """The recorded results of a tool step, in call order, or ``None`` unless every call has one.

        A recorded placeholder of a call waiting for a person (``awaiting_approval``) is no result for a message
        that carries that call's decision: the process that committed it died waiting (the decision was never
        committed), and the decided call must run — or be denied — now, not be answered "awaiting approval".
        """
        results = self._results
        if not results:
            return None
        decided = message.context.approvals
        found = []
        for call in message.calls:
            result = results.get(call.id)
            if result is None or (decided and result.awaiting_approval and call.id in decided):
                return None
            found.append(result)
        served = tuple(found)
        self._step = (self.calls, served)
        return served

    async def ran(self, results: tuple[ToolResult, ...]) -> None:
        """A live tool step's results, committed (with the response that asked, if still pending).

        A step whose calls were decided in place runs in two executor messages — the calls needing no decision
        (the waiting ones answered by placeholders), then the decided ones — and each commits the step's results.
        The second commit holds both (:func:`_joined`): committed alone, it would replace the step's stored
        results, and a recovered run would run the first message's calls again (and wait for a decision again).

        Cancellation: as :meth:`StepWriter.commit`'s: the step's results (and the responses pending) are
        committed whole or not at all.
        """
        number = self.calls
        last = self._step
        if last is not None and last[0] == number:
            results = _joined(last[1], results)
        self._step = (number, results)
        if self.writer is not None:
            await self.writer.commit(
                Commit(responses=self._take_pending(), steers=self._take_steered(), results=(number, results))
            )

    def _take_pending(self) -> tuple[tuple[int, LLMResponse], ...]:
        pending = tuple(self._pending)
        self._pending.clear()
        return pending

    def _take_steered(self, end: bool = False) -> tuple[tuple[int, tuple[Message, ...]], ...]:
        """The live steers of the responses :meth:`_take_pending` took (call it right after it): theirs only — a
        steer taken before a call not answered yet waits for that call's response.

        ``end``: the run's end commit — the steers taken before a call that never answered (it failed, or the run
        was cut short in it) go too, with no response of their own (:attr:`Commit.steers`): left out, the recording
        would say the run ended at the answer before them, and a replay would end there, ``ok``."""
        steered = self._steered
        if not steered:
            return ()
        answered = self.calls
        if end:
            taken = tuple(steered.items())
            steered.clear()
            return taken
        taken = tuple((n, m) for n, m in steered.items() if n <= answered)
        for n, _ in taken:
            del steered[n]
        return taken


class TapedProvider:
    """The provider reference a taped run asks: recorded responses first, then the real ProviderActor."""

    __slots__ = ("ref", "tape")

    def __init__(self, ref: Any, tape: Tape) -> None:
        self.ref = ref
        self.tape = tape

    @property
    def runtime(self) -> Any:
        return getattr(self.ref, "runtime", None)

    @property
    def actor(self) -> Any:
        """The actor the reference asks (its ProviderActor: the provider named in the run's errors)."""
        return getattr(self.ref, "actor", None)

    async def ask(self, message: Any) -> Any:
        kind = type(message)
        if kind is not Complete and kind is not Stream:
            return await self.ref.ask(message)
        tape = self.tape
        response = tape.recorded_response()
        if response is not None:
            return response if kind is Complete else _RecordedStream(response)
        if tape.ending is not None:  # (rare) a recording that ended cancelled: cancelled at the call it does not hold
            await tape.cancel_here()
            if tape.sealed and tape.guard is not None:
                tape.guard()  # (its live run not found to cancel: a sealed tape still asks no model)
        if kind is Complete:
            response = await self.ref.ask(message)
            if type(response) is LLMResponse or isinstance(response, LLMResponse):
                await tape.answered(response)
            # (else a provider's broken contract — None, a str: not journaled; the step names it and the run ends
            # failed, which is committed as its end)
            return response
        return _TappedStream(await self.ref.ask(message), tape)


class TapedTools:
    """The tool executor reference a taped run asks: recorded results first, then the real executor."""

    __slots__ = ("ref", "tape")

    def __init__(self, ref: Any, tape: Tape) -> None:
        self.ref = ref
        self.tape = tape

    async def ask(self, message: Any) -> Any:
        if type(message) is not ExecuteTools:
            return await self.ref.ask(message)
        tape = self.tape
        recorded = tape.recorded_results(message)
        if recorded is not None:
            _retell(recorded)
            if tape.ending is not None:
                tape.served_step()
            return recorded
        if tape.ending is not None:  # (rare) a recording that ended cancelled: cancelled at the step it does not hold
            await tape.cancel_here()
        if tape.guard is not None:
            tape.guard()
        await tape.flush()  # the response that asked: committed before any of its calls runs
        if self.ref is None:  # the agent has no tools: every call is for an unknown tool (as the loop says)
            results = tuple(
                ToolResult.of(c.id, c.name, ToolStatus.invalid, unknown_tool_text(c.name, ())) for c in message.calls
            )
        else:
            results = await self.ref.ask(message)
        await tape.ran(results)
        return results


def _interrupt(reason: str | None) -> Any:
    """The recorded interrupt, as a control message of the run's inbox."""
    from .live import Interrupt  # (the rare path)

    return Interrupt(reason)


def _joined(before: tuple[ToolResult, ...], after: tuple[ToolResult, ...]) -> tuple[ToolResult, ...]:
    """One step's results from two executor messages: ``before``'s in their (call) order, each replaced by
    ``after``'s result for the same call (a decided call's for its placeholder); ``after``'s others at the end."""
    newer = {r.call_id: r for r in after}
    joined = [newer.pop(r.call_id, r) for r in before]
    joined.extend(newer.values())
    return tuple(joined)


def _retell(results: tuple[ToolResult, ...]) -> None:
    """The events of recorded tool calls, told again as the executor told them (``replayed=True``)."""
    sink = current_sink()
    if sink is None or not sink:
        return
    for r in results:
        sink.emit("tools.started", call_id=r.call_id, name=r.name, replayed=True)
        sink.emit(
            "tools.finished",
            call_id=r.call_id,
            name=r.name,
            status=r.status,
            duration=r.duration,
            size=r.size_chars,
            replayed=True,
        )


class _RecordedStream:
    """A recorded response as a provider stream: its text in one piece, then its ``StreamEnd``."""

    __slots__ = ("_events",)

    def __init__(self, response: LLMResponse) -> None:
        events: list[Any] = [TextDelta(response.content)] if response.content else []
        events.append(StreamEnd(response))
        self._events = iter(events)

    async def __aenter__(self) -> _RecordedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._events)
        except StopIteration:
            raise StopAsyncIteration from None


class _TappedStream:
    """A live provider stream whose final response is handed to the tape before the run sees it."""

    __slots__ = ("_stream", "_tape")

    def __init__(self, stream: Any, tape: Tape) -> None:
        self._stream = stream
        self._tape = tape

    async def __aenter__(self) -> _TappedStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        result: bool | None = await self._stream.__aexit__(exc_type, exc, tb)
        return result

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        event = await self._stream.__anext__()
        if type(event) is StreamEnd and isinstance(event.response, LLMResponse):  # (else the step names it)
            await self._tape.answered(event.response)
        return event
