"""A run as its recorders see it: ``run.started`` (and ``run.resumed``, ``run.history_repaired``) before the loop,
``run.finished`` after.

Only a run with a sink goes through here (:meth:`LoopController.run
<agentactors.loop.controller.LoopController.run>`): a run nobody records is the loop's own coroutine, with no
frame of ours around it.  What each event carries is built in :mod:`agentactors._event_payloads`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

import agentactors._event_payloads as payloads

from ..events import EventSink
from .lineage import Origin
from .pause import PausedRun
from .result import RunResult
from .state import LoopState

__all__ = ["recorded"]


async def recorded(
    sink: EventSink,
    loop: Callable[[], Awaitable[RunResult[Any]]],
    state: LoopState,
    *,
    native: bool,
    origin: Origin | None,
    resume: tuple[PausedRun, Any] | None,
    stream: bool = False,
) -> RunResult[Any]:
    """Run ``loop`` (the run whose state is ``state``) between its ``run.started`` and ``run.finished``.

    ``origin``: where a delegated run comes from (its ``run.started`` says so); ``resume``: the paused run a
    resumed one goes on from, and the decisions for it (``run.resumed``); ``stream``: every model call of the run
    takes the stream path (``run.started`` says ``stream: True``, so a step that streamed no text — only tool calls —
    is still told as streamed: ``explain``, the ``chat`` span's ``gen_ai.request.stream``).

    Cancellation: ``run.finished`` says ``cancelled=True``, then the cancellation propagates; an error the
    run raises is in ``run.finished``'s ``error``, then propagates.
    """
    started = payloads.run_started(
        state.config.agent_name,
        len(state.inputs),
        native,
        state.config.run_info,
        parent=(origin.link.step, origin.call_id, origin.depth) if origin is not None else None,
        resume_of=resume[0] if resume is not None else None,
    )
    if stream:
        started["stream"] = True
    sink.emit("run.started", **started)
    if resume is not None:
        sink.emit("run.resumed", **payloads.run_resumed(*resume))
    if state.repair is not None:  # the caller's history, repaired before the first step sends it
        sink.emit("run.history_repaired", **state.repair.event_data())
    try:
        result = await loop()
    except BaseException as exc:
        sink.step = None
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            sink.emit("run.finished", **payloads.run_cancelled(state.steps, state.total_usage()))
        else:
            sink.emit("run.finished", **payloads.run_raised(exc, state.steps, state.total_usage()))
        raise
    sink.step = None
    sink.emit("run.finished", **payloads.run_finished(result))
    return result
