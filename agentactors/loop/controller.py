"""``LoopController``: one run of the tool loop (``docs/loop.md``).

One run = generate → execute the tool calls → feed the results back → repeat, until the model answers
without tool calls, bounded by ``max_steps``.  The controller asks a
:class:`~agentactors.gateway.provider.ProviderActor` (``Complete`` / ``Stream``) and a
:class:`~agentactors.tools.executor.ToolExecutorActor` (``ExecuteTools``) and returns a
:class:`~agentactors.loop.result.RunResult`.  It asks them inside the run's frame
(:mod:`agentactors.actors.frame`): one cancel scope, entered once by ``_loop`` and carrying the run's
deadline, through which a halt of either actor cancels a handler running in the run's task.

A controller is made for one run and is whole when made: its input (or the paused run it goes on
with) is given then, and the run's state — one :class:`~agentactors.loop.state.LoopState`, made by its
constructor — with it.  The run is cut into layers, each a method with one
job — the way httpx's client sends through ``_send_handling_auth`` → ``_send_handling_redirects`` →
``_send_single_request``::

    _loop                  the run, one coroutine: its frame; its RunActor's body (agentactors.loop.live)
    │                      when it has a runtime; steps until one ends it, each written out here (its
    │                      model call awaited in this frame); max_steps; the inbox (steers, an
    │                      interrupt) read at every boundary
    ├── _resume_step       a resumed run: the paused step finished with a person's decisions
    ├── _open_step         a step's request (request.step_request), or the run's end before one
    ├── _generate          one model call: Complete, or the stream path (streamed.generate_streamed)
    ├── _failed_call       the call failed: the run's failed result, or the step once more (a degraded
    │                      output strategy)
    └── _after_call        the model answered: usage and cost taken, then one of
        ├── _answer_step   no tool calls: think-only, continued past by a nudge, or the answer
        ├── _tool_step     tool calls: record_calls, execute, then _after_tools → feed_back
        │   │              (results with the nudges' notes, follow-ups, status routing); or
        │   ├── pause          a call waits for approval: the run ends paused (agentactors.loop.pause),
        │   │                  or waits in place (_decided_in_place: approval="wait")
        │   └── _handoff_step  a handoff call: the other calls run, then _switch seats the target agent
        │                      (agentactors.loop.seats)
        └── OutputSteps    a typed run (agentactors.loop.output_steps): its request by output strategy,
                           its answer checked (answer_step), its output calls (calls_step)

What is not the core's lives beside it, one idea a module, and the layers call it: :mod:`.state` (where
the run stands, and the step API every kind of step uses on it: ``record_calls``, ``feed_back``,
``pause``, ``result``...), :mod:`.config` (what a run takes from its agent), :mod:`.request` (a step's
request), :mod:`.output_steps` (a typed run's steps, called with the run's state: it knows nothing of the
controller), :mod:`.streamed` (the stream path), :mod:`.call_ids` (the call-id rule), :mod:`.pause` and
:mod:`.seats` (approvals and handoffs), :mod:`.lineage` (the runs a run's tools start), :mod:`.recorded`
(``run.started`` / ``run.finished`` around a recorded run).

A step's outcome is a value: ``None`` to go on, or the run's :class:`~agentactors.loop.result.RunResult`
when the step ends the run.  Of the layers a plain run goes through, only ``_loop``, ``_after_call``,
``_failed_call`` and ``_tool_step`` (and ``execute``, which asks the executor) are coroutines: the parts
that do not await are plain methods, ``_generate`` hands the provider's ask to the loop instead of wrapping
it, and the loop awaits the model call itself — each ``async def`` awaited is a coroutine frame held by
every run in flight (~0.3 KB; 10,000 runs in flight are a target): a run waiting on its model call holds
``_loop`` and the ask (:func:`~agentactors.actors.frame.ask_in`, its own trampoline), measured by
``benchmarks/_waiting_run_memory.py``.

The seams:

* a step's tool choice is decided in ``LoopState.step_choice``, and nowhere else;
* a step's calls are executed in :meth:`LoopController.execute`, and nowhere else (the tool, handoff,
  output and resume steps call it);
* a run ends where a layer returns its result: ``_loop`` (``max_steps``, the deadline, a halted actor),
  ``_open_step`` and ``_failed_call`` (a budget spent, the provider stack giving up: ``LoopState.failed``),
  ``_answer_step`` (an answer, ``max_empty_steps``), ``_tool_step`` (``end_turn``), ``LoopState.pause`` (a
  call awaiting approval) and the typed steps; ``LoopState.feed_back`` raises for ``"raise"``;
* the agent answering is changed in ``_take_seat`` only (a handoff, or resuming a run paused after
  one); a run's children report to it through ``execute``'s link (:mod:`agentactors.loop.lineage`).

What ends a run, and how errors and cancellation leave it, is :meth:`LoopController.run`'s docstring
and ``docs/loop.md``.  Events (only built when a recorder listens): ``run.started``, ``step.started``,
``llm.request`` (the full :class:`~agentactors.messages.LLMRequest`), ``llm.text_delta``,
``llm.response``, ``step.finished``, ``run.finished``; the tool executor adds ``tools.*`` and the
provider stack its own, all carrying this run's id because the run's sink is the current one while it
runs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol, cast

import anyio

import agentactors._event_payloads as payloads
import agentactors.loop.lineage as lineage

from .._slots import draft
from ..actors.frame import Frame, ask_in, open_frame
from ..errors import ActorStopped, ErrorKind, MalformedResponseError, ProviderError, RunInterruptedError
from ..events import EventSink
from ..gateway import ticket as run_ticket
from ..gateway.cost_budget import CostBudget
from ..gateway.provider import Complete
from ..messages import LLMRequest, LLMResponse, Message, StopReason, ToolCall, text_message
from ..providers.port import broken_contract
from ..redaction import redact
from ..settings import ModelSettings
from ..tools.executor import execute_tools
from ..tools.results import ToolResult, ToolStatus
from .config import LoopConfig, StatusRoute
from .cost import stop_before
from .json_transport import parse_reply
from .live import RunActor, register_latent, unregister_latent, waits_in_place
from .nudges import step_view
from .options import NO_OPTIONS, RunOptions
from .output_steps import OutputSteps
from .pause import PausedRun, any_pending
from .recorded import recorded
from .request import step_request
from .result import RunResult
from .seats import Seat, SeatResolver, filtered, handoff_calls, handoff_results
from .state import NO_USAGE, LoopState
from .streamed import generate_streamed, hosted_name
from .tape import open_tape
from .thinking import answer_of, strip_think

# LoopConfig and StatusRoute live in .config; they are named here too, where they always were.
__all__ = ["LoopConfig", "LoopController", "StatusRoute"]

log = logging.getLogger("agentactors.loop")

# A model call's message, Complete(request), filled as a draft (agentactors._slots; the class checks nothing).
_new = object.__new__
_CompleteDraft = draft(Complete, "request")

#: The stop reasons a step goes on from as usual (an answer, or calls): a tuple, so the step's test is one C-level
#: ``in`` (a frozenset would hash the member through Enum's Python ``__hash__``).
_USUAL_STOPS = (StopReason.end_turn, StopReason.tool_use)
#: ``_odd_stop``'s "the usual answer step" (a sentinel, typed as the result it stands beside).
_GO_ON = cast("RunResult[Any]", object())

#: A paused run to go on with and a person's decisions for its pending calls.
Resume = tuple[PausedRun, Mapping[str, "bool | str"]]


class _Asks(Protocol):
    """What the controller needs of an actor reference."""

    async def ask(self, message: Any) -> Any: ...


def _parsed(response: LLMResponse, step: int) -> tuple[str, Sequence[ToolCall]]:
    """A reply on the JSON transport: its text and the calls parsed from it (ids prefixed by the step); a call
    block the reply ended inside at ``max_tokens`` is a call marked cut off, as the native wires mark one."""
    cut = response.stop_reason is StopReason.max_tokens
    parsed = parse_reply(response.content, id_prefix=f"s{step}_", cut=cut)
    return parsed.text, parsed.calls


def _merged(config: LoopConfig, settings: ModelSettings | None) -> ModelSettings | None:
    """A run's settings over the agent's (field by field); ``None`` keeps the agent's cached skeletons."""
    if not settings:
        return None
    return config.settings.merge(settings) if config.settings is not None else settings


class LoopController:
    """Drives one run; create one per run, with its input (it holds that run's state).

    :param config: the agent's :class:`LoopConfig`.
    :param provider: a reference to the ProviderActor (``ask(Complete(...))`` / ``ask(Stream(...))``).
    :param tools: a reference to the ToolExecutorActor (asked ``ExecuteTools``), or ``None`` when
        the agent has no tools.
    :param messages: the input conversation (checked here as ``LLMRequest`` would check it); for a
        resumed run, the paused run's ``messages``.
    :param resume: a paused run (:mod:`agentactors.loop.pause`) and a person's decisions for it: the run
        goes on from it (see :meth:`run`); ``None`` for a new run.
    :param native: the provider carries tools natively; ``False`` selects the JSON-fallback transport.
    :param sink: this run's event sink, or ``None`` when nobody listens.
    :param run_id: the run's id (also the sink's).
    :param deps: handed to tools through their ``ToolContext``; never recorded.
    :param input_key: the caller's stable key for the input, handed to tools (``ToolContext.input_key``).
    :param on_text: called with each piece of answer text as it streams (selects the stream path).
    :param stream: use the provider's stream path even without ``on_text`` (for ``agent.stream``).
    :param settings: the run's own :class:`~agentactors.settings.ModelSettings`, merged over the agent's
        (field by field) into the run's requests.
    :param deadline: seconds the whole run may take (see :meth:`run`), or ``None``.
    :param priority: the run's class at the ProviderActor (higher is served first), or ``None``
        (``0``, or the class of the run this one is a child of).
    :param cost_limit: the most the run may spend, or a budget it spends from (:mod:`.cost`), or ``None``.
    :param origin: where a delegated run comes from (a parent's tool step), or ``None``.
    :param runtime: the runtime the run's children run in.
    :param seats: how to find another agent's seat (handoffs), or ``None``.

    :raises TypeError: an input message that is not a :class:`~agentactors.messages.Message`.
    :raises ValueError: a ``deadline`` or ``priority`` that is not one.

    The run's state is one :class:`~agentactors.loop.state.LoopState`, made here; the answering seat's
    actors, settings and typed steps (:class:`~.output_steps.OutputSteps`) are set here too, and again
    by ``_take_seat`` after a handoff.  A run is driven by :meth:`run`.
    """

    __slots__ = (
        "_frame",
        "_home",
        "_live",
        "_native",
        "_options",
        "_origin",
        "_output",
        "_provider",
        "_resume",
        "_run_settings",
        "_seats",
        "_sink",
        "_state",
        "_stream",
        "_tape",
        "_tools",
        "run_id",
    )

    def __init__(
        self,
        config: LoopConfig,
        provider: _Asks,
        tools: _Asks | None,
        messages: Sequence[Message],
        *,
        resume: Resume | None = None,
        native: bool = True,
        sink: EventSink | None = None,
        run_id: str | None = None,
        deps: Any = None,
        on_text: Callable[[str], None] | None = None,
        stream: bool = False,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: float | CostBudget | None = None,
        origin: lineage.Origin | None = None,
        runtime: Any = None,
        seats: SeatResolver | None = None,
    ) -> None:
        options = (
            RunOptions(on_text, deps, settings, deadline, priority, input_key, cost_limit)
            if on_text is not None
            or deps is not None
            or settings is not None
            or deadline is not None
            or priority is not None
            or input_key is not None
            or cost_limit is not None
            else NO_OPTIONS
        )
        self._start(
            config, provider, tools, messages, resume, native, sink, run_id, options, stream, origin, runtime, seats
        )

    @classmethod
    def of(
        cls,
        config: LoopConfig,
        provider: _Asks,
        tools: _Asks | None,
        messages: Sequence[Message],
        resume: Resume | None,
        native: bool,
        sink: EventSink | None,
        run_id: str | None,
        options: RunOptions,
        stream: bool,
        origin: lineage.Origin | None,
        runtime: Any,
        seats: SeatResolver | None,
    ) -> LoopController:
        """The controller the constructor makes, from its arguments given positionally and the per-run options
        as one :class:`~agentactors.loop.options.RunOptions` (``on_token`` is the constructor's ``on_text``).

        For the agent layer, which makes one controller per run and holds the options as that value already:
        matching fifteen keywords costs about half a microsecond a call, a tenth of the run's setup.  The
        options are checked as the constructor checks them.
        """
        controller = cls.__new__(cls)
        cls._start(
            controller, config, provider, tools, messages, resume, native, sink, run_id, options, stream, origin,
            runtime, seats,
        )
        return controller

    def _start(
        self,
        config: LoopConfig,
        provider: _Asks,
        tools: _Asks | None,
        messages: Sequence[Message],
        resume: Resume | None,
        native: bool,
        sink: EventSink | None,
        run_id: str | None,
        options: RunOptions,
        stream: bool,
        origin: lineage.Origin | None,
        runtime: Any,
        seats: SeatResolver | None,
    ) -> None:
        """The constructor's body (see the class)."""
        if options is not NO_OPTIONS and (options.deadline is not None or options.priority is not None):
            run_ticket.check_deadline(options.deadline)  # (checked here: nothing is raised once it is awaited)
            run_ticket.check_priority(options.priority)
        # Durable runs (agentactors.loop.tape): a runtime with a journal serves recorded steps and commits live
        # ones; a run it recovers keeps its id.  (Most runtimes have none: no call then.)
        tape = self._tape = (
            open_tape(
                runtime, run_id, config.agent_name, messages,
                origin.parent_run_id if origin is not None else None, resume,
            )
            if getattr(runtime, "journal", None) is not None
            else None
        )
        if tape is not None and tape.run_id is not None:
            run_id = tape.run_id
            if sink is not None:
                sink.run_id = run_id
        self.run_id = run_id
        self._sink = sink if sink else None
        self._state = LoopState(config, messages, native, self._sink, run_id, resume[0] if resume else None)
        self._resume = resume
        # The run's options (deps, the token callback, settings, deadline, priority, input key, cost limit): one
        # value, shared by every plain run (NO_OPTIONS), read where each is needed.
        self._options = options
        self._stream = stream or options.on_token is not None
        # The budgets the run charges (its own, its parent's, the ones entered around it, its runtime's: .cost).
        self._state.cost.open(
            options.cost_limit, runtime, origin.link.budgets if origin is not None else (), config.run_info
        )
        # Delegation: where this run comes from (a parent's tool step) and the runtime its children run in.
        self._origin = origin
        self._home = runtime
        # Handoffs: how to find another agent's seat.
        self._seats = seats
        self._frame: Frame | None = None  # while the run's loop runs
        # The run as an actor (agentactors.loop.live), with a runtime: made when the run starts if it can be addressed
        # from the start, else when it first is (run_actor): a run nobody addresses holds none.
        self._live: RunActor | None = None
        # The answering seat (changed by _take_seat): its actors, settings and typed steps.
        self._provider = provider
        self._tools = tools
        self._native = native
        settings = options.settings
        self._run_settings = _merged(config, settings) if settings else None
        if tape is not None:
            self._provider, self._tools = tape.seat(provider, tools)
            if tape.steers:  # a steered recording: its steers reach the run through its inbox, as they did
                tape.attach(self.run_actor())
        self._output = self._typed_steps() if config.output is not None else None

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> Coroutine[Any, Any, RunResult[Any]]:
        """Run the loop to a :class:`RunResult` (await it).  Nothing is raised before it is awaited.

        What ends a run: an answer (a step with no tool calls whose text is not think-only);
        ``max_empty_steps`` think-only steps in a row, or ``max_steps`` steps (``bounded``, with the last
        substantive answer); a tool status routed to ``"end_turn"``; a call awaiting approval (``paused``);
        the provider stack giving up (``generation_failed`` when nothing useful was produced; the error is
        attached, the content never holds a vendor's error body); the run's provider or executor halted
        while handling its message (a model call ends the run as a provider failure; a tool step raises
        :class:`~agentactors.errors.ActorStopped`, as a plain ask would).

        The run carries its ticket (:mod:`agentactors.gateway.ticket`: its age, priority class and
        deadline) to every place it waits.  With a ``deadline``, the whole run — budget waits at the
        ProviderActor, retries' backoff, model calls, tool steps — is bounded by it: a run past it
        is cancelled where it stands (an in-flight HTTP request included) and ends with
        :class:`~agentactors.errors.RunDeadlineExceeded` in ``RunResult.error`` (``bounded`` when an
        earlier step had produced substantive text, which is then the content); its messages are
        the conversation up to the last complete step.  A run started inside another run's work
        (a tool that runs an agent) keeps that run's age and earlier deadline.

        A resumed run (made with ``resume``): the decisions (checked by the caller: one per pending call,
        ``True`` or a reason) reach the executor with the pending calls — approved ones run, denied ones
        are answered ``denied`` with the reason.  Every result of the paused step then goes back in call
        order and the loop goes on from the next step, with the paused run's counters (``steps``,
        ``usage``, ``tool_calls``).  This controller must be the seat of the paused run's agent (the
        agent layer sees to it).  The resumed run has its own run id; its ``run.resumed`` event names
        the paused one.

        :raises ToolStatusError: a tool status routed to ``"raise"``.

        Cancellation: propagates as anyio's cancellation exception from whichever await the run is
        in (the provider request or the running tools are cancelled with it); nothing of the
        cancelled turn is kept — the conversation is a private list the caller never sees unless the
        run ends.
        """
        if self._tape is not None:  # a journaled run: between its begin and end commits
            return self._tape.around(
                self._adopted(self._origin) if self._origin is not None
                else self._loop() if self._sink is None else self._recorded(self._sink)
            )
        if self._origin is not None:
            return self._adopted(self._origin)
        if self._sink is None:
            # Nothing to record: the loop's own coroutine, without a frame of ours around it
            # (a frame is ~0.3 KB, and 10k runs in flight are a target).
            return self._loop()
        return self._recorded(self._sink)

    async def _adopted(self, origin: lineage.Origin) -> RunResult[Any]:
        """A child run: run, then hand the result to the parent (its ``children`` and ``usage``).

        A child that raises or is cancelled — a tool's timeout, the parent's deadline, which reaches the child
        as a cancellation — is handed over too, with what it spent (its model calls were paid for), as a result
        saying how it ended; then what it raised propagates.
        """
        try:
            result = await (self._loop() if self._sink is None else self._recorded(self._sink))
        except BaseException as exc:
            state = self._state
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                origin.link.adopt(state.result("", state.inputs, cancelled=True))
            else:
                origin.link.adopt(state.result("", state.inputs, error=exc))
            raise
        origin.link.adopt(result)
        return result

    def _recorded(self, sink: EventSink) -> Coroutine[Any, Any, RunResult[Any]]:
        """``run`` with a sink: ``run.started`` / ``run.finished`` around the loop (:mod:`.recorded`)."""
        return recorded(
            sink, self._loop, self._state, native=self._native, origin=self._origin, resume=self._resume,
            stream=self._stream,
        )

    @property
    def live(self) -> RunActor | None:
        """The run as an actor (:mod:`.live`): its control messages' address; ``None`` without a runtime."""
        return self.run_actor() if self._home is not None else None

    @property
    def state(self) -> LoopState:
        """The run's :class:`~.state.LoopState` (read by the live-run registry: :class:`.live.LatentRun`)."""
        return self._state

    def run_actor(self) -> RunActor:
        """The run as an actor, made on first use (:class:`.live.LatentRun`): started at once if the run runs.

        Call it only for a run with a runtime.
        """
        live = self._live
        if live is None:
            live = self._live = RunActor(self.run_id, self._state)
            if self._frame is not None:  # running, registered as latent: the actor takes its place
                live.start(self._home, self._frame, spawn=False)
        return live

    def cancelled_result(self) -> RunResult[Any]:
        """The result of a run cancelled through its handle: nothing of the turn kept."""
        return self._state.cancelled()

    # -- the layers: run → step → generate → answer step | tool step ------------------------------

    async def _loop(self) -> RunResult[Any]:
        """The run: its frame, then one step after another until one ends it — one coroutine for all of it.

        A step ends the run by returning its result; when ``max_steps`` steps did not, the run ends
        here, ``bounded``, with the last substantive answer — or, when the run's deadline passes
        first, with :class:`~agentactors.errors.RunDeadlineExceeded` (``LoopState.past_deadline``).
        A resumed run first finishes the paused step (:meth:`_resume_step`), then goes on the same way.

        A run with a runtime is the body of its :class:`~.live.RunActor` (:mod:`.live`): its task holds a
        handler slot of that actor through the run's frame (:func:`~agentactors.actors.frame.hold`), so the
        steps are that handler, here, in the run's task; a halt of the actor (``rt.stop(ref)``, the runtime's
        exit) cancels the frame and the run raises :class:`~agentactors.errors.ActorStopped`.  A run that
        cannot be addressed when it starts is spawned when it first is (:meth:`.live.RunActor.activate`).
        Between steps — its boundaries — its inbox is read: an interrupt ends the run, steers join the
        conversation; a step that would end the run on an answer while steers wait does not: the run goes
        on, one more step, with that answer and the steers.

        The run, its actor's life and its steps — down to the model call, awaited here — are this one
        coroutine (what follows an answer, :meth:`_after_call`, is another): each layer awaited while the
        model works is a frame every waiting run holds.

        Cancellation: propagates from the step it interrupts (the deadline's own is absorbed here).
        """
        state = self._state
        ticket = run_ticket.start_ticket(self._options.deadline, self._options.priority)
        outer_ticket = run_ticket.enter(ticket)
        if state.cost.armed:  # its budgets are asked again for a call that waited for a slot (.cost.RunCost.recheck)
            state.cost.enter_check()
        # The run's frame: one cancel scope, entered once, for the run's deadline and for every ask it makes
        # to its provider and executor — a halt of either cancels their handler through it (:mod:`frame`).
        frame = self._frame = open_frame(self._provider, ticket.deadline)
        # An ask in a frame is no cancellation point (a scope per ask gave it one): each step has its own,
        # frame.checkpoint() (a bound method made per call: one held here would be ~64 B every waiting run holds).
        max_steps = state.config.max_steps  # the first agent's: a handoff does not reset the run's bound
        # The run's actor is read from self._live where it is needed, never kept here: a run registered latent
        # (below) gets one the moment something addresses it (run_actor), in the middle of a step too.
        try:
            with frame.scope:
                if self._home is not None:
                    # Spawned now when it can be addressed from the start — a stream's handle, recorders that
                    # learn its id — else on first use (rt.run_ref): a run nobody addresses costs a
                    # registration, neither a spawn nor an actor (.live.LatentRun).
                    if self._stream or self._sink is not None:
                        self.run_actor().start(self._home, frame, spawn=True)
                    elif self._live is not None:  # made before the run started (its handle asked for it)
                        self._live.start(self._home, frame, spawn=False)
                    elif self.run_id is not None:
                        register_latent(self._home, self.run_id, self)
                # Set once the run ended (None while a step raises): a step's own end, unless the run goes on past
                # it (steers waiting).  One local for both: the loop's frame is what a waiting run holds.
                result: RunResult[Any] | None = None
                try:
                    if self._resume is not None:
                        await frame.checkpoint()
                        result = await self._resume_step(*self._resume)
                        if result is not None and self._live is not None and self._live.goes_on(
                            result, max_steps, self._tape is not None and self._tape.recording_left
                        ):
                            result = None
                    while result is None:
                        if state.steps >= max_steps:
                            result = (
                                state.result(state.answer_so_far, bounded=True) if self._output is None
                                else self._bounded_typed(max_steps)
                            )
                            break
                        await frame.checkpoint()
                        live = self._live
                        if live is not None and (live.steers is not None or live.interrupted is not None):
                            tape = self._tape
                            if tape is not None:  # journaled: recorded steps first, steers committed (.tape)
                                if tape.boundary(live, state):
                                    result = self._interrupted(live)
                                    break
                            elif live.interrupted is not None:
                                result = self._interrupted(live)
                                break
                            else:
                                live.take_steers_into(state)
                        # One step, written out (a coroutine of its own would be a frame every run waiting on its
                        # model call holds: ~0.3 KB): its request, the model call awaited here, what follows.
                        request = self._open_step()
                        if type(request) is not RunResult:
                            try:
                                response: Any = await self._generate(request)
                            except Exception as exc:
                                response = await self._failed_call(request, exc)
                            except BaseException:
                                # Cancelled mid-call (the run cancelled, its deadline, a halt): a call sent before
                                # it is billed by the vendor, so it is charged — at the estimate the layer that
                                # sent it noted (.cost.RunCost.cut_short).
                                state.cost.cut_short(request)
                                raise
                            # One type test either way: an answer, the failed step's result, or (rare) something else.
                            if type(response) is LLMResponse:
                                result = await self._after_call(response)
                            elif type(response) is RunResult:
                                result = response
                            else:
                                result = await self._odd_answer(response)
                            response = None  # (not held while the next step's call waits)
                        else:
                            result = request
                        request = None
                        live = self._live
                        if result is not None and live is not None and live.steers is not None and live.goes_on(
                            result, max_steps, self._tape is not None and self._tape.recording_left
                        ):
                            result = None  # the run goes on: one more step, with that answer and the steers
                finally:
                    live = self._live
                    if live is not None:
                        # Cut short by the frame's own cancellation, the run has no outcome yet: it is made below
                        # (the scope absorbs that cancellation), and the live run ends with it there — a handle's
                        # waiters woken now would read "no result" of a run that returns one.
                        if result is not None or not frame.scope.cancel_called:
                            ref = live.end(result)
                            if ref is not None:
                                await live.retire(self._home, ref)
                    elif self._home is not None and self.run_id is not None:
                        unregister_latent(self._home, self.run_id, self)
                return result
            # Reached only when the frame's own cancellation ended the run (an outer one propagates): its
            # deadline, or a halt of an actor it asked that reached here as a cancellation, not ActorStopped
            # (its own actor's included), or a handle found by rt.run_ref cancelling it.
            live = self._live
            if live is not None and live.cancelled and not frame.halted:
                result = self.cancelled_result()
            elif live is not None and live.was_stopped:  # the run's own actor was stopped: it raises, below
                result = None
            elif ticket.deadline is not None and not frame.halted:
                result = state.past_deadline(ticket)
            else:
                result = state.failed(ActorStopped("an actor this run asked was stopped while handling its message"))
            if live is not None and not live.finished:  # left to here by the finally above: ended with that outcome
                ref = live.end(result)
                if ref is not None:
                    await live.retire(self._home, ref)
            if result is None:  # as an ask to the run's own, stopped, actor would
                raise ActorStopped(f"run {self.run_id!r} was stopped while it ran")
            return result
        except BaseException:
            # The frame was cancelled, but something else ended the run (an outer cancellation, an error): the
            # live run the finally above left to the code after the scope is ended here, without a result.
            # (An except clause costs nothing on the way of a run that returns.)
            live = self._live
            if live is not None and not live.finished:
                ref = live.end(None)
                if ref is not None:
                    await live.retire(self._home, ref)
            raise
        finally:
            self._frame = None
            run_ticket.leave(outer_ticket)
            if state.cost.armed:
                state.cost.leave_check()

    def _bounded_typed(self, max_steps: int) -> RunResult[Any]:
        """A typed run that reached ``max_steps`` without a valid answer: ``bounded``, and — when answers were
        refused — the :class:`~agentactors.errors.OutputValidationError` saying what the last one lacked (without
        it the refusals left no trace: ``output=None``, ``error=None``)."""
        state, output = self._state, self._output
        error = output.output.bounded_error(max_steps) if output is not None else None
        if error is None:
            return state.result(state.answer_so_far, bounded=True)
        return state.result(state.answer_so_far, bounded=True, error=error)

    def _interrupted(self, live: RunActor) -> RunResult[Any]:
        """The run's result when ``run.interrupt()`` ended it at a boundary: what it had, and the error."""
        state = self._state
        reason = live.interrupted.reason if live.interrupted is not None else None
        error = RunInterruptedError(
            f"the run was interrupted after step {state.steps}" + (f": {reason}" if reason else ""),
            reason=reason,
            step=state.steps,
        )
        if self._sink is not None:
            self._sink.emit("run.interrupted", reason=redact(reason) if reason else reason)
        log.debug("run %s: interrupted at step %d", self.run_id, state.steps)
        return state.result(state.answer_so_far, error=error)

    def _open_step(self) -> Any:
        """A step begins: its request (``LLMRequest``), or the run's :class:`RunResult` when it ends before one.

        The first part of a step (:meth:`_loop` writes the step out: this, the model call, :meth:`_after_call`):
        a spent budget, or a call whose estimate would pass it, ends the run with nothing sent; a request the
        seat cannot carry (an explicit ``ToolOutput`` it cannot force) is the run's failed result.
        """
        state = self._state
        # state.cost.armed is set when the run opens: whether it charges a budget.
        if state.cost.armed and (ended := stop_before(state)) is not None:
            return ended
        state.steps += 1
        sink = self._sink
        if sink is not None:
            sink.step = state.steps
            sink.emit("step.started")
        try:
            return step_request(state, self._output, self._native, self._run_settings, sink)
        except ProviderError as exc:  # refused before anything is sent
            return state.failed(exc)

    async def _failed_call(self, request: LLMRequest, exc: Exception) -> Any:
        """The step's model call failed with ``exc``: the run's failed result, or the response of the same step
        sent once more with the next output strategy (Auto's forced choice could not be carried).

        A call noted as sent and then cut short by a layer (a copy abandoned) is billed: charged here.
        """
        state, output = self._state, self._output
        state.cost.cut_short(request)
        if output is None or not output.degrade(exc):
            return state.failed(exc, hosted_name(self._provider))
        try:
            return await self._generate(step_request(state, output, self._native, self._run_settings, self._sink))
        except Exception as again:
            return state.failed(again, hosted_name(self._provider))

    async def _odd_answer(self, response: object) -> RunResult[Any] | None:
        """The model call answered something that is neither an exact ``LLMResponse`` nor the step's result: an
        ``LLMResponse`` subclass is an answer; anything else (``None``, a ``str``, a ``dict`` a custom provider's
        ``complete()`` returned, or its ``StreamEnd`` carried) fails the run with a
        :class:`~agentactors.errors.MalformedResponseError` naming the provider — not an ``AttributeError`` from
        deep inside the step."""
        if isinstance(response, LLMResponse):
            return await self._after_call(response)
        name = hosted_name(self._provider)
        error = broken_contract("the model call's answer", response, "an LLMResponse", provider=name, model=None)
        return self._state.failed(error)

    async def _after_call(self, response: LLMResponse) -> RunResult[Any] | None:
        """The step's model answered ``response``: its usage and cost taken, then the answer step or the tool step
        (or a typed one).

        :returns: the run's result when this step ends the run, or ``None`` to go on.
        :raises ToolStatusError: a tool status routed to ``"raise"`` (from the tool step).

        Cancellation: propagates out of the running tools; the step is abandoned where it stood.
        """
        state, output, sink = self._state, self._output, self._sink
        # The first step's usage is taken as is, and none (the shared default) adds nothing: no sum is allocated.
        if response.usage is not NO_USAGE:
            state.usage = response.usage if state.usage is NO_USAGE else state.usage + response.usage
        if sink is None:
            state.cost.charge(response)
        else:
            sink.emit("llm.response", **payloads.llm_response(response), cost=state.cost.charge(response))
        if state.cost.armed and (ended := state.past_cost_limit()) is not None:
            return ended
        text, calls = (
            (response.content, response.tool_calls) if self._native else _parsed(response, state.steps)
        )
        # The step's one look at why the model stopped: end_turn and tool_use go on below; the rest (cut off,
        # filtered, paused, malformed) are read by _odd_stop, which may end the run or take another step.
        stop = state.stop_reason = response.stop_reason
        if stop not in _USUAL_STOPS and not calls and (odd := self._odd_stop(response, text)) is not _GO_ON:
            return odd
        if calls:
            if self._live is not None and self._live.interrupted is not None and (
                self._tape is None or not self._tape.served_last  # a recorded response's calls: started before
            ):
                return self._interrupted(self._live)  # interrupted during the model call: its calls never start
            if output is not None and output.has_output_call(calls):
                return await output.calls_step(state, self.execute, response, text, calls)
            return await self._tool_step(response, text, calls)
        if output is not None:
            answer = answer_of(text)
            if answer is not None:  # (think-only text is the answer step's, typed or not)
                return await output.answer_step(state, response, answer)
        return self._answer_step(response, text)

    def _odd_stop(self, response: LLMResponse, text: str) -> RunResult[Any] | None:
        """A step without calls whose model stopped for a reason other than ``end_turn`` / ``tool_use``: the run's
        result, ``None`` to take another step, or ``_GO_ON`` for the usual answer step.

        * ``pause_turn`` (Anthropic paused a long server-tool turn): the paused turn — its text and its
          ``provider_data``, the server blocks the wire replays — goes back as an assistant message and the run
          takes another step, which continues it (a step toward ``max_steps``, not a think-only one);
        * ``content_filter`` with no answer (think-only or empty): the run ends at once with a content-policy
          :class:`~agentactors.errors.ProviderError` naming the vendor's reason, as a blocked prompt does —
          asking the same again would be filtered again;
        * ``other`` with no answer (Gemini's ``MALFORMED_FUNCTION_CALL``...): think-only, so asked once more;
          when that ends the run (``max_empty_steps``), a :class:`~agentactors.errors.MalformedResponseError`
          naming the vendor's reason says why, rather than no error at all.

        Anything else (an answer cut at ``max_tokens`` or filtered part way, ``stop_sequence``) is the usual
        answer step; ``RunResult.stop_reason`` says how it stopped.
        """
        stop, state = response.stop_reason, self._state
        if stop is StopReason.pause_turn:
            answer = strip_think(text)
            if not answer and response.provider_data is None:
                return _GO_ON  # nothing to send back: a think-only step
            state.append(
                text_message("assistant", answer, (), None, None, response.reasoning, response.provider_data, False)
            )
            state.served_by = response.provider
            if self._sink is not None:
                self._sink.emit("step.finished", tool_calls=0, paused_turn=True)
            return None
        if answer_of(text) is not None or stop not in (StopReason.content_filter, StopReason.other):
            return _GO_ON
        reason = response.raw_stop_reason or stop.value
        provider = response.provider or hosted_name(self._provider)
        if stop is StopReason.content_filter:
            return state.failed(
                ProviderError(
                    f"the model's answer was blocked by a content filter ({reason})",
                    provider=provider, model=response.model, kind=ErrorKind.content_policy,
                )
            )
        result = self._answer_step(response, text)
        if result is None or result.error is not None:
            return result
        error = MalformedResponseError(f"the model stopped with {reason} and no answer", provider=provider,
                                       model=response.model)
        log.debug("run %s: step %d ended without an answer: %s", self.run_id, state.steps, reason)
        return state.result(result.content, bounded=True, error=error)

    def _generate(self, request: LLMRequest) -> Awaitable[LLMResponse]:
        """One model call for ``request``: the provider asked ``Complete(request)``, or the stream path.

        A plain method returning the call's coroutine for the step to await: no frame of ours
        between the step and the provider's, per step and per run in flight.  What the call raises
        is the provider stack giving up; the step turns it into the run's failed result.

        Cancellation: the provider request is cancelled with the step awaiting it (an in-flight HTTP
        request stops).
        """
        if self._stream:
            output = self._output
            return generate_streamed(
                self._provider,
                request,
                native=self._native,
                sink=self._sink,
                on_text=self._options.on_token,
                partial=output.partials() if output is not None else None,
                frame=self._frame,
            )
        message: Any = _new(_CompleteDraft)  # Complete(request), with no constructor frame per call
        message.request = request
        message.__class__ = Complete
        return ask_in(self._frame, self._provider, message)

    def _answer_step(self, response: LLMResponse, text: str) -> RunResult[Any] | None:
        """A step without tool calls: think-only, an acknowledgment a nudge continues past, or the answer.

        * think-only: nothing is added; the ``max_empty_steps``-th in a row ends the run ``bounded``
          with the last substantive answer;
        * an acknowledgment a nudge continues past (``LoopState.continued_past``): dropped, and the
          run goes on;
        * an answer: appended to the conversation; the run ends on it.
        """
        state, sink = self._state, self._sink
        answer = answer_of(text)
        if answer is None:  # think-only
            state.think_only_streak += 1
            if sink is not None:
                sink.emit("step.finished", think_only=True, tool_calls=0)
            if state.think_only_streak >= state.config.max_empty_steps:
                state.served_by = response.provider
                return state.result(state.answer_so_far, bounded=True)
            return None
        state.think_only_streak = 0
        state.answer_so_far = answer
        if state.continued_past(answer):
            if sink is not None:
                sink.emit("step.finished", tool_calls=0, nudged=True)
            return None
        # Message.assistant(answer, reasoning=, provider_data=), set field by field (text_message).
        state.conversation.append(
            text_message("assistant", answer, (), None, None, response.reasoning, response.provider_data, False)
        )
        state.served_by = response.provider
        if sink is not None:
            sink.emit("step.finished", tool_calls=0)
        return state.result(answer)

    async def _tool_step(self, response: LLMResponse, text: str, calls: Sequence[ToolCall]) -> RunResult[Any] | None:
        """A step with tool calls: the assistant message, the calls executed, their results fed back.

        The step's text (think blocks stripped) goes into the assistant message and, when it is
        substantive, becomes the run's answer so far (``LoopState.record_calls``).  The calls run
        through :meth:`execute`, the one place a step's calls are executed; ``LoopState.feed_back``
        takes their results.  A handoff call makes it a handoff step (:meth:`_handoff_step`); a call
        waiting for approval ends the run paused (``LoopState.pause``).

        :returns: the run's result when a status routed to ``"end_turn"`` ends it, else ``None``.
        :raises ToolStatusError: a status routed to ``"raise"``.

        Cancellation: propagates out of the running tools, which are cancelled with the step (an
        async tool sees it; a sync tool's thread is abandoned); no result of theirs is fed back.
        """
        state = self._state
        calls = state.record_calls(response, text, calls)
        config = state.config
        if config.handoffs:
            taken = handoff_calls(calls, config.handoffs)
            if taken:
                return await self._handoff_step(calls, taken)
        results = await self.execute(calls, state.steps)
        if config.may_pause and any_pending(results):
            waited = await self._decided_in_place(calls, results)
            if waited is None:
                return state.pause(calls, results)
            results = waited
        return self._after_tools(calls, results)

    async def _decided_in_place(
        self, calls: Sequence[ToolCall], results: tuple[ToolResult, ...]
    ) -> tuple[ToolResult, ...] | None:
        """The step's results once a person decided on its pending calls in place, or ``None`` to pause.

        In place when every pending call's tool says ``approval="wait"`` (:func:`.live.waits_in_place`):
        the run waits (:meth:`.live.RunActor.decide`), then the pending calls run with their decisions
        (approved ones run, denied or timed-out ones are answered ``denied``), in call order with the rest.
        """
        waits = waits_in_place(self._tools, results) if self._home is not None else None
        if waits is None:
            return None
        by_id = {c.id: c for c in calls}
        pending = [(by_id[call_id], timeout) for call_id, timeout, _ in waits]
        # The run waits to be addressed (Approve / Deny): its actor is made now if nothing asked for it yet.
        decisions = await self.run_actor().decide(pending, {call_id: reason for call_id, _, reason in waits})
        ran = await self.execute([c for c, _ in pending], self._state.steps, decisions)
        done = {r.call_id: r for r in results}
        done.update((r.call_id, r) for r in ran)
        return tuple(done[c.id] for c in calls)

    def _after_tools(self, calls: Sequence[ToolCall], results: tuple[ToolResult, ...]) -> RunResult[Any] | None:
        """A tool step's results fed back (``LoopState.feed_back``); the run's result when a status ends the turn."""
        state = self._state
        if state.feed_back(step_view(state.steps, calls, results)):
            return state.result(state.answer_so_far)
        return None

    async def execute(
        self, calls: Sequence[ToolCall], step: int, approvals: Mapping[str, bool | str] | None = None
    ) -> tuple[ToolResult, ...]:
        """Run a step's calls through the executor: one result per call, in call order.

        While they run, this run is the parent of any run a tool starts (:mod:`.lineage`).
        ``approvals``: a person's decisions for calls that waited for them (a resumed run).

        Cancellation: propagates from the executor's ask; the calls still running are cancelled (each
        ``tools.finished`` with status ``cancelled``), and no result of the step is returned.
        """
        state = self._state
        config = state.config
        if self._tools is None:
            # No executor (the agent has no tools): every call is for an unknown tool.
            from ..tools.results import unknown_tool_text

            return tuple(
                ToolResult.of(c.id, c.name, ToolStatus.invalid, unknown_tool_text(c.name, ())) for c in calls
            )
        link = state.link
        if link is None:
            origin = self._origin
            link = state.link = lineage.RunLink(
                self.run_id, origin.depth if origin is not None else 0, self._sink, self._home, state.cost.budgets
            )
        link.step = step
        token = lineage.enter(link)
        try:
            # ExecuteTools(calls, ExecutionContext(run_id, agent, step, cap, policy, deps, input_key, approvals)),
            # set field by field (execute_tools): built per tool step.
            message = execute_tools(
                tuple(calls), self.run_id, config.agent_name, step, config.max_tool_result_chars, config.tool_policy,
                self._options.deps, self._options.input_key, approvals,
            )
            results: tuple[ToolResult, ...] = await ask_in(self._frame, self._tools, message)
        finally:
            lineage.leave(token)
        return results

    # -- handoffs and resumed runs: the answering agent changes --------------------------------------

    async def _handoff_step(self, calls: Sequence[ToolCall], taken: Sequence[ToolCall]) -> RunResult[Any] | None:
        """A tool step with handoff calls: the other calls run, the first handoff is taken, the seat changes.

        The results go back in call order (:func:`~.seats.handoff_results`), so the target agent reads
        a well-formed conversation.  When another call of the step waits for approval, the run pauses
        first and the handoff is answered "not used" (the model may call it again once the decisions are in).
        """
        state = self._state
        config = state.config
        first = taken[0]
        target = config.handoffs[first.name]
        others = [c for c in calls if c.name not in config.handoffs]
        ran = await self.execute(others, state.steps) if others else ()
        pausing = config.may_pause and any_pending(ran)
        results = handoff_results(calls, taken, target, ran, pausing=pausing)
        if pausing:
            return state.pause(calls, results)
        if state.feed_back(step_view(state.steps, calls, results)):
            return state.result(state.answer_so_far)
        return await self._switch(target, first.name, first.id)

    async def _switch(self, target: str, via: str, call_id: str) -> RunResult[Any] | None:
        """The run goes on with agent ``target``: its seat from the agent layer, its view of the conversation.

        :returns: ``None``, or the run's failed result when ``target`` cannot be seated (its toolset cannot
            list its tools, two of its tools share a name): the steps before it were paid for, so the run
            ends as a provider failure does — what it had, its usage, the error (a note on it naming the
            handoff) — rather than raising them away.
        :raises RuntimeError: the agent layer gave no way to find agents (a LoopController made by hand).
        """
        if self._seats is None:
            raise RuntimeError(f"cannot hand off to {target!r}: this controller was made without seats")
        state = self._state
        source = state.config.agent_name
        try:
            seat = await self._seats(target, via)
        except Exception as exc:
            exc.add_note(f"handing off from {source!r} to {target!r} failed: the run ended there")
            log.debug("run %s: handing off from %s to %s failed: %s", self.run_id, source, target, type(exc).__name__)
            if state.answer_so_far:  # what the model said on its way out: kept, the run stopped early
                return state.result(state.answer_so_far, bounded=True, error=exc)
            return state.result("", generation_failed=True, error=exc)
        if self._sink is not None:
            self._sink.emit("agent.handoff", **payloads.agent_handoff(source, target, call_id))
        log.debug("run %s: handed off from %s to %s", self.run_id, source, target)
        self._take_seat(seat, filtered(seat, tuple(state.conversation)))
        if state.handoffs is None:
            state.handoffs = []
        state.handoffs.append(target)
        return None

    def _take_seat(self, seat: Seat, conversation: tuple[Message, ...]) -> None:
        """Answer from now on as ``seat``'s agent: its config, actors and settings, on ``conversation``."""
        config = seat.config
        self._provider = seat.provider
        self._tools = seat.tools
        if self._tape is not None:
            self._provider, self._tools = self._tape.seat(seat.provider, seat.tools)
        self._native = seat.native
        self._run_settings = _merged(config, self._options.settings)
        self._state.seat(config, seat.native, conversation)
        self._output = self._typed_steps()

    def _typed_steps(self) -> OutputSteps | None:
        """The answering seat's typed steps, or ``None`` when its agent answers in plain text."""
        state = self._state
        if state.config.output is None:
            return None
        return OutputSteps(
            state.config,
            self._provider,
            native=self._native,
            system=(state.system, state.skip),
            settings=self._run_settings,
            sink=self._sink,
            run_id=self.run_id,
            deps=self._options.deps,
        )

    async def _resume_step(self, paused: PausedRun, decisions: Mapping[str, bool | str]) -> RunResult[Any] | None:
        """Finish a paused step: the pending calls with their decisions, then every result in call order.

        A run paused after a handoff goes on with the agent that was answering (its seat, found by name).
        """
        state = self._state
        if paused.agent != state.config.agent_name:
            if paused.agent is None:  # an unnamed agent is no handoff's target: its pause goes on in it alone
                raise ValueError(
                    "the paused run was answered by an unnamed agent; resume it with that agent, "
                    f"not {state.config.agent_name!r}"
                )
            if self._seats is None:
                raise RuntimeError(f"the paused run was answered by {paused.agent!r}, which this agent cannot reach")
            self._take_seat(await self._seats(paused.agent, None), tuple(state.conversation))
        sink = self._sink
        if sink is not None:
            sink.step = paused.step
        ran, results = paused.completed(await self.execute(paused.pending, paused.step, decisions))
        if paused.output_step and self._output is not None:
            return await self._output.resume(state, paused.calls, ran, results)
        return self._after_tools(ran, results)
