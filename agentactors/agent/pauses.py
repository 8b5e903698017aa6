"""Once-only resumes: a paused run goes on once per process, however often ``agent.resume`` is called.

A pause is plain data (:class:`~agentactors.loop.pause.PausedRun`), so nothing in it can say it was
used: a double-clicked "Approve", or two requests racing, would each run the approved calls (two
refunds).  So :meth:`Agent.resume <agentactors.Agent.resume>` *claims* the pause — synchronously, before
its first ``await``, so two resumes at once cannot both pass — and a second claim of the same pause
raises :class:`~agentactors.errors.PauseConsumedError` and runs nothing.  A resume that fails before its
run starts (a runtime that is not running, a toolset that cannot list its tools) gives the claim back.

A pause is named by the id of the run that paused and its pending calls' ids.  The claims live in
this process (the most recent ``_LIMIT`` of them), shared by its threads — two request threads, each
running its own event loop, race on one table, so a claim's look-up and its write are one step under a
lock; across processes the caller must record the claim itself (docs/agents.md, "Approvals") — or use a
session, whose store does it.

A resume run again from its recording — ``replay`` or ``fork`` of a resumed run (:mod:`agentactors.journal`)
— consumes nothing: the resume it repeats already went on, and its approved calls are served from the
recording.  Such a caller starts it inside :func:`again`, and that one resume is not claimed.

A resume *recovered* from a journal (``rt.recover()``: :mod:`agentactors.journal.recovery`) is the same resume
going on — started by a process that died, or by this very process (a runtime closed and opened again, a
supervisor's recovery pass): it starts inside :func:`recovering`, which claims the pause — a person's later
resume of it raises as ever — but finds no fault with a claim made already (this process made it: the resume it
goes on with).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from ..errors import PauseConsumedError
from ..loop.pause import PausedRun

__all__ = ["again", "claim", "recovering", "release"]

#: Claims kept (oldest forgotten first): a pause older than this many resumes is no longer recognised.
_LIMIT: Final = 100_000

_claimed: dict[tuple[str | None, tuple[str, ...]], None] = {}
#: Held while the table is read and written: between a claim's look-up and its write another thread may run.
_lock: Final = threading.Lock()

PauseKey = tuple[str | None, tuple[str, ...]]

#: How the next resume started in this task claims its pause: ``""`` as ever, ``"again"`` not at all (a recorded
#: resume run again), ``"recovered"`` idempotently (a journaled resume going on).
_AGAIN: contextvars.ContextVar[str] = contextvars.ContextVar("agentactors_pause_again", default="")


@contextmanager
def again() -> Iterator[None]:
    """Within the block, the next resume started in this task repeats a recorded one: it is not claimed."""
    token = _AGAIN.set("again")
    try:
        yield
    finally:
        _AGAIN.reset(token)


@contextmanager
def recovering() -> Iterator[None]:
    """Within the block, the next resume started in this task goes on with a journaled one (``rt.recover()``): its
    pause is claimed — a later resume of it raises — and a claim made already is no error (the resume it goes on
    with made it); the claim is kept should the run fail before it starts (the journal recovers it again)."""
    token = _AGAIN.set("recovered")
    try:
        yield
    finally:
        _AGAIN.reset(token)


def _key(state: PausedRun) -> PauseKey:
    return state.run_id, tuple(call.id for call in state.pending)


def claim(state: PausedRun) -> PauseKey | None:
    """Claim ``state`` for one resume (``None``: a recorded resume run again, inside :func:`again`: nothing
    claimed; or a journaled resume recovered, inside :func:`recovering`: claimed for good, never given back).
    :raises PauseConsumedError: it was claimed already."""
    mode = _AGAIN.get()
    if mode:
        _AGAIN.set("")  # this resume only: one its tools start (a fork's live steps) is claimed as ever
        if mode == "again":
            return None
    key = _key(state)
    with _lock:
        taken = key in _claimed
        if not taken:
            _claimed[key] = None
            if len(_claimed) > _LIMIT:
                del _claimed[next(iter(_claimed))]
    if mode:  # recovered: consumed from now on, whoever consumed it first; kept should its run not start
        return None
    if taken:
        raise PauseConsumedError(
            f"the run {state.run_id!r} paused for {', '.join(c.name for c in state.pending)} was resumed already "
            "(a pause goes on once); nothing ran this time",
            run_id=state.run_id,
        )
    return key


def release(key: PauseKey | None) -> None:
    """Give a claim back: its resume failed before anything ran."""
    if key is not None:
        with _lock:
            _claimed.pop(key, None)
