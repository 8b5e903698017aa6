"""``AgentSession``: the handle to one conversation — ``await session.send(prompt)``, one turn at a time.

``rt.session(agent, key)`` (or ``agent.session(key)``) returns a handle, not an actor: it holds the
session's address (the runtime, the store, the key) and the agent to talk to, nothing else, so it is
free to make, to drop and to make again — every handle with the same store and key reaches the same
session, and so does one with another store object of the same file or database (a store's optional
``address``: :class:`~agentactors.sessions.store.SessionStore`), such as one a web handler makes per
request.  A call on the handle activates the session if need be (:mod:`agentactors.sessions.registry`)
and asks its actor (:mod:`agentactors.sessions.actor`), which runs the turn and commits it.

The session is the *conversation*, not the agent: it is addressed by store and key only, and each turn
runs the agent of the handle that sent it.  Two handles with different agents on one key take turns on
one history (a triage agent's session continued by a specialist, say).

What the handle reads synchronously — :attr:`~AgentSession.history`, :attr:`~AgentSession.paused`,
:attr:`~AgentSession.pending_approvals`, :attr:`~AgentSession.version` — is the session's committed
state *as this runtime holds it*: empty (``()``, ``False``, ``None``) before its first turn in this
runtime, never a store read, never raising; once the session deactivated, ``history`` is what the
handle last saw (the others are empty again).  The store is the truth; a turn always starts from it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Generic

from ..actors.runtime import Runtime
from ..errors import RunNotFoundError
from ..gateway.cost_budget import CostBudget
from ..loop.live import RunActor, live_runs
from ..loop.result import RunResult
from ..messages import Message, ToolCall
from ..output.spec import OutputT
from ..parts import Part, is_part
from ..pricing import Cost
from ..settings import ModelSettings
from .actor import Refresh, Resolve, Resuming, SessionAgent, Turn
from .registry import Sessions, Slot
from .spending import session_budget, turn_budgets
from .store import SessionStore, check_key, check_store, store_address

__all__ = ["AgentSession", "open_session"]


def open_session(
    agent: Any,
    key: str,
    *,
    runtime: Runtime,
    store: SessionStore | None,
    idle_timeout: float,
    cost_limit: float | CostBudget | None = None,
) -> AgentSession[Any]:
    """The session ``key`` of ``runtime``, kept in ``store`` (``None``: the runtime's own ``MemoryStore``).

    Nothing is activated or loaded yet: that is the first turn's work.  ``agent`` is used through its
    public ``run`` and ``resume`` (:class:`~agentactors.sessions.actor.SessionAgent`).  ``cost_limit``: the
    most the session's turns may spend together in this runtime, or a budget they spend from
    (:mod:`agentactors.sessions.spending`).

    :raises TypeError: ``key`` is not a str, ``agent`` has no ``run`` and ``resume``, ``store`` is not a session
        store (or its ``address`` is not hashable), ``idle_timeout`` is not a number.
    :raises ValueError: an empty ``key``, or one with a lone surrogate (no database keeps it: it is not UTF-8) or
        a NUL (PostgreSQL's text cannot hold it) — refused here, in every store alike, not at the first turn of a
        database's session (:func:`~agentactors.sessions.store.check_key`), an
        ``idle_timeout`` that is not > 0 (``math.inf``: never idle), a
        ``cost_limit`` that is neither a non-negative number nor a budget.
    :raises RuntimeError: ``runtime`` is not running.
    """
    check_key(key)
    if not (callable(getattr(agent, "run", None)) and callable(getattr(agent, "resume", None))):
        raise TypeError(f"a session's agent has run() and resume() (an Agent), not {type(agent).__name__}")
    if isinstance(idle_timeout, bool) or not isinstance(idle_timeout, int | float):
        raise TypeError(f"idle_timeout is a number of seconds, not {type(idle_timeout).__name__}")
    if not idle_timeout > 0:
        raise ValueError(f"idle_timeout must be > 0 seconds (math.inf: never idle), not {idle_timeout!r}")
    sessions = Sessions.of(runtime)
    chosen = sessions.default_store() if store is None else check_store(store)
    return AgentSession(agent, key, sessions, chosen, float(idle_timeout), cost_limit=cost_limit)


def _live_run(rt: Runtime, listed: Any) -> Any:
    """The live run (its handle) whose input is ``listed`` (by identity) or, for a resolved turn, that goes on
    from its pause; else ``None``.

    ``listed`` is what the session's actor lists its running turn by (``SessionActor.live``): the run's input
    tuple, which the run keeps as ``LoopState.inputs``, or for a resolved turn a
    :class:`~agentactors.sessions.actor.Resuming`, the pause's run id, which its run keeps as
    ``LoopState.resumed_from``.  Nothing is paid per turn but a dict entry; a steer walks the live runs."""
    resuming = listed.run_id if isinstance(listed, Resuming) else None
    for run_id, run in list(live_runs(rt).items()):  # (a run without its actor yet is read as it is: LatentRun)
        state = run.state
        found = state.inputs is listed if resuming is None else state.resumed_from == resuming
        if found and not (isinstance(run, RunActor) and run.finished):
            try:
                return rt.run_ref(run_id)
            except RunNotFoundError:
                return None
    return None


def _prompt_messages(prompt: Any) -> tuple[Message, ...]:
    """A turn's new messages: a str, a Message, messages, or the content parts of one user message."""
    if isinstance(prompt, str):
        if not prompt:  # (each wire would end it its own way: Anthropic drops the message and answers 400)
            raise ValueError("a turn needs a prompt or at least one message: the prompt is an empty string")
        return (Message.user(prompt),)
    if isinstance(prompt, Message):
        return (prompt,)
    if is_part(prompt):
        return (Message.user(prompt),)
    if not isinstance(prompt, Sequence) or isinstance(prompt, bytes | bytearray | memoryview):  # (bytes: ints)
        raise TypeError(f"a prompt is a str, a Message, messages or content parts, not {type(prompt).__name__}")
    items = tuple(prompt)
    if not items:
        raise ValueError("a turn needs a prompt or at least one message")
    if all(is_part(p) for p in items):
        parts: tuple[Part, ...] = items
        return (Message.user(parts),)
    for m in items:
        if not isinstance(m, Message):
            raise TypeError(f"a turn's messages are Message objects, not {type(m).__name__}")
    return items


class AgentSession(Generic[OutputT]):
    """One conversation held by a virtual actor: see the module docstring and ``docs/sessions.md``.

    Made by ``rt.session(agent, key, *, store=None, idle_timeout=60.0)`` or ``agent.session(key, ...)``.

    Its calls — ``send``, ``steer``, ``resolve``, ``refresh`` — may come from another thread's event loop
    (asyncio or trio): they are handed to the runtime's loop (``rt.call``) and run there; their answers and
    errors come back, and cancelling the caller cancels the call there (``Runtime.call``).
    """

    __slots__ = ("_agent", "_budget", "_idle_timeout", "_key", "_seen", "_sessions", "_slot", "_store")

    def __init__(
        self,
        agent: SessionAgent,
        key: str,
        sessions: Sessions,
        store: SessionStore,
        idle_timeout: float,
        *,
        cost_limit: float | CostBudget | None = None,
    ) -> None:
        self._agent = agent
        self._key = key
        self._sessions = sessions
        self._store = store
        self._idle_timeout = idle_timeout
        self._slot: Slot = (store_address(store), key)  # one session per address: store objects of one file share it
        # The history this handle last saw while the session was active: what it shows once the session
        # deactivated (the session itself keeps nothing in memory then; a handle kept by its user does).
        self._seen: tuple[Message, ...] = ()
        # What the session's turns spend, counted in this runtime (agentactors.sessions.spending).
        self._budget = session_budget(sessions.rt, self._slot, key, cost_limit, store)

    def __repr__(self) -> str:
        state = "active" if self.active else "inactive"
        return f"<AgentSession {self._key!r} {state} version={self.version}>"

    # -- what the handle knows ----------------------------------------------------------------------

    @property
    def key(self) -> str:
        return self._key

    @property
    def agent(self) -> SessionAgent:
        """The agent this handle's turns run."""
        return self._agent

    @property
    def store(self) -> SessionStore:
        """The store this handle was made with.  The session belongs to the store's address (the optional
        ``address`` of :class:`~agentactors.sessions.store.SessionStore`): while it is active, the store object
        that activated it serves it, which may be another one of the same file or database."""
        return self._store

    @property
    def runtime(self) -> Runtime:
        return self._sessions.rt

    @property
    def idle_timeout(self) -> float:
        return self._idle_timeout

    @property
    def budget(self) -> CostBudget:
        """The session's budget in this runtime: what its turns spent (their delegated runs' included), its
        limit (``cost_limit=``).  Not in the store; kept through deactivations when it has a limit or is yours, else
        while the session is active or a handle holds it (:mod:`agentactors.sessions.spending`, ``docs/costs.md``)."""
        return self._budget

    @property
    def cost(self) -> Cost | None:
        """What the session's turns cost in this runtime, or ``None`` when a call had no price (never a
        smaller sum); a turn that was not committed counts too: it was paid for."""
        return self._budget.cost

    @property
    def active(self) -> bool:
        """Whether an actor holds the session in this runtime now (loaded, or loading for a first turn)."""
        return self._sessions.get(self._slot) is not None

    @property
    def history(self) -> tuple[Message, ...]:
        """The committed conversation as this runtime holds it.

        ``()`` until the session is first active here; once it deactivated, the history this handle last
        saw (its last turn's, or its last read while active) — a new handle then shows ``()`` until the
        next turn reloads the session.  Never a store read, never raising.
        """
        entry = self._sessions.get(self._slot)
        if entry is not None:
            self._seen = entry.actor.history
        return self._seen

    @property
    def version(self) -> int | None:
        """The committed version this runtime holds (``None``: not active here, or never committed)."""
        entry = self._sessions.get(self._slot)
        return None if entry is None else entry.actor.version

    @property
    def paused(self) -> bool:
        """The last turn paused for approval and waits for :meth:`resolve` (as this runtime knows it)."""
        entry = self._sessions.get(self._slot)
        return entry is not None and entry.actor.paused is not None

    @property
    def pending_approvals(self) -> tuple[ToolCall, ...]:
        """The calls awaiting a decision, in call order; ``()`` unless :attr:`paused`."""
        entry = self._sessions.get(self._slot)
        return () if entry is None else entry.actor.pending

    # -- turns --------------------------------------------------------------------------------------

    async def send(
        self,
        prompt: str | Message | Sequence[Message] | Sequence[Part] | Part,
        *,
        deps: Any = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        cost_limit: float | CostBudget | None = None,
    ) -> RunResult[OutputT]:
        """Run one turn: the agent on the history plus ``prompt``; commit it if it ends well.

        Turns of one session run one at a time, in the order they were sent; turns of different
        sessions run concurrently.  ``deps``, ``settings``, ``deadline`` and ``priority`` are the
        run's (:meth:`agentactors.Agent.run`); ``deps`` are never stored.  ``cost_limit`` is the turn's own
        (its runs', under scope ``"turn"``), within the session's (:attr:`budget`).  The result is the run's:
        ``result.messages`` is the history after the turn when it was committed.  A turn that fails,
        is cancelled or ends with an error returns (or raises) as the run does and leaves the history
        exactly as it was (the commit rule: ``docs/sessions.md``).  A turn that pauses for approval
        returns the paused result; the session then waits for :meth:`resolve`.

        :raises SessionPausedError: the session waits for decisions on a paused turn.
        :raises SessionConflictError: another runtime or process committed a turn first: this one was
            not committed (its tools may have run); the session reloads before its next turn.
        :raises SessionFormatError: the stored session is in a format this version cannot read.
        :raises ActorStopped: the runtime is closing.
        :raises TypeError, ValueError: not a prompt.

        Cancellation: cancelling the caller cancels the turn — still queued, it never runs; running,
        its run is cancelled — and nothing is committed.  A cancellation that arrives while the
        turn's commit is being written waits for it: the turn is then committed (the store's write is
        all or nothing), and the caller gets its result or the cancellation.  From another thread's
        event loop (the turn then runs in the runtime's: see the class), the same, through ``rt.call``.
        """
        if self._elsewhere():
            crossed: RunResult[Any] = await self.runtime.call(
                partial(
                    self.send, prompt, deps=deps, settings=settings, deadline=deadline, priority=priority,
                    cost_limit=cost_limit,
                )
            )
            return crossed
        budgets = turn_budgets(self._budget, cost_limit)  # the turn spends under the session's budget
        message = Turn(self._agent, _prompt_messages(prompt), deps, settings, deadline, priority, budgets)
        result: RunResult[Any] = await self._ask(message)
        return result

    async def steer(self, text_or_message: str | Message) -> None:
        """Add a user message to the turn running now, taken at its run's next step boundary.

        The same as ``run.steer(...)`` on the turn's live run (``docs/loop.md``, "Live runs"): after the
        step in progress, the message joins the conversation, the model reads it once, and — when the turn
        is committed — it is part of the history.  Several steers keep their order.  A steer does not
        queue behind the session's turns: with no turn running in this runtime it is refused, and nothing
        is kept (``send()`` it as the next turn instead).

        :raises RunNotFoundError: no turn of this session is running in this runtime (none was sent,
            it finished, or it is still queued behind another).
        :raises RunFinishedError: the turn ended as the steer arrived; it did not read it.
        :raises TypeError: neither a str nor a :class:`~agentactors.messages.Message`.
        :raises ValueError: a tool message (as ``run.steer``).

        Cancellation: as ``run.steer``, an ask to the turn's run: a steer cancelled before the run's actor
        handled it is not taken (nothing is kept); one handled is read at the next step boundary.  From another
        thread's event loop (through ``rt.call``) a cancelled caller waits for the handling to end.
        """
        if not isinstance(text_or_message, str | Message):
            raise TypeError(f"steer() takes a str or a Message, not {type(text_or_message).__name__}")
        if isinstance(text_or_message, Message) and text_or_message.role == "tool":
            raise ValueError("a steer cannot be a tool message: a tool result answers a call the model made")
        if self._elsewhere():
            await self.runtime.call(self.steer, text_or_message)
            return
        rt = self._sessions.rt
        # Listed by the session's actor while its turn runs.  (Sessions.of: a runtime that is not running is a
        # RuntimeError, as any call of the handle.)
        inputs = Sessions.of(rt).live.get(self._slot)
        run = _live_run(rt, inputs) if inputs is not None else None
        if run is None:
            raise RunNotFoundError(
                f"session {self._key!r} has no turn running here to steer: send() the message as a new turn"
            )
        await run.steer(text_or_message)

    async def resolve(self, decisions: Mapping[str, bool | str], *, deps: Any = None) -> RunResult[OutputT]:
        """Decide the paused turn (``{call_id: True}`` approves, ``{call_id: "reason"}`` denies) and resume it.

        The pause is claimed in the store before anything runs, so of two resolves of one pause — here
        or in another process — one goes on and the other raises :class:`SessionConflictError`.  The
        resumed run's outcome is committed like a turn's (its messages become the history, or it
        pauses again: ``result.paused``).  If it fails or is cancelled after the claim, the pause is
        consumed and the history is what it was before the paused turn (``docs/sessions.md``).

        :raises TypeError, ValueError: decisions that do not name exactly the pending calls, a decision
            that is not ``True``, ``False`` or a reason, or this handle's agent cannot resume the pause (it
            paused with another agent, and this one hands off to none): nothing is claimed.
        :raises SessionConflictError: no pause to resolve (resolved already, or never paused), or
            another runtime or process claimed it first.  Nothing ran.

        Cancellation: as :meth:`send`; a cancellation before the claim is written leaves the pause as
        it was.
        """
        if self._elsewhere():
            crossed: RunResult[Any] = await self.runtime.call(partial(self.resolve, decisions, deps=deps))
            return crossed
        # (Listed among the runtime's live turns by the session's actor while its run goes on: steer() finds it.)
        result: RunResult[Any] = await self._ask(Resolve(self._agent, decisions, deps, (self._budget,)))
        return result

    async def refresh(self) -> AgentSession[OutputT]:
        """Read the session's committed state from its store into this runtime, running nothing; returns the handle.

        What :attr:`history`, :attr:`paused`, :attr:`pending_approvals` and :attr:`version` show is
        this runtime's copy, empty until the session is active here: after a restart, ``await
        session.refresh()`` activates it (as a turn would) and reads the store, so a session that was
        paused shows it — ``session.paused`` and the calls in ``session.pending_approvals``, ready to
        :meth:`resolve`.  On an active session it reloads (another process may have moved it on).

        :raises SessionFormatError: the stored session is in a format this version cannot read.
        :raises ActorStopped: the runtime is closing.

        Cancellation: a read; a cancelled caller leaves the session as it was.
        """
        if self._elsewhere():
            await self.runtime.call(self.refresh)
            return self
        await self._ask(Refresh())
        return self

    def _elsewhere(self) -> bool:
        """Whether the caller runs in another thread (another event loop) than the session's runtime.

        A session's actor, its registry and its turns belong to the runtime's loop: asked from another
        thread's loop, they ran the turn in the wrong loop, or failed half-way with that loop's own errors
        — and could take the runtime down with them.  So the handle's calls cross to the runtime's loop
        first (:meth:`Runtime.call <agentactors.Runtime.call>`), as ``rt.call`` would.
        """
        thread = self._sessions.rt.thread
        return thread is not None and thread != threading.get_ident()

    async def _ask(self, message: Turn | Resolve | Refresh) -> Any:
        sessions = self._sessions
        entry = sessions.checkout(self._store, self._slot, self._idle_timeout)
        entry.budget = self._budget  # held while the session is active (agentactors.sessions.spending)
        try:
            result = await entry.ref.ask(message)
        finally:
            self._seen = entry.actor.history
            sessions.checkin(entry)
        return result
