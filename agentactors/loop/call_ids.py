"""The call-id rule: every tool call of a run has an id of its own (``docs/loop.md``).

Two calls with one id would both run (two side effects for one id) and the next request would carry
two results for it, which vendors reject.  So a call that reuses an id — one already in the run's
conversation (the caller's history included) or earlier in the same step — gets a fresh one before
anything runs: ``<id>_2`` (``_3``, ...), recognisably the same call's, at most 40 characters.  The
assistant message, the executor, the results and ``RunResult.tool_calls`` all carry the new id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import attrs

from ..events import EventSink
from ..messages import Message, ToolCall

__all__ = ["fresh_id", "ids_in", "unique_ids"]

log = logging.getLogger("agentactors.loop")

#: Vendors cap call ids (OpenAI at 40 characters); a fresh id keeps within it.
_MAX_CALL_ID = 40


def ids_in(conversation: Iterable[Message]) -> set[str]:
    """The ids of the calls ``conversation`` holds: what a run's first tool step starts from."""
    return {c.id for m in conversation for c in m.tool_calls}


def unique_ids(
    calls: Sequence[ToolCall], taken: set[str], *, sink: EventSink | None = None, run_id: str | None = None
) -> Sequence[ToolCall]:
    """``calls`` with every id unique: a call whose id is in ``taken`` (or earlier in ``calls``) gets a fresh one.

    ``taken`` gains the ids of ``calls`` as they are returned.  A renamed call is reported to ``sink``
    (``tools.duplicate_call_id``) and logged under ``run_id``.
    """
    if len(calls) == 1 and calls[0].id not in taken:  # the common case: nothing to rename
        taken.add(calls[0].id)
        return calls
    out: list[ToolCall] = []
    for call in calls:
        if call.id in taken:
            fresh = fresh_id(call.id, taken)
            if sink is not None:
                sink.emit("tools.duplicate_call_id", call_id=call.id, renamed_to=fresh, name=call.name)
            log.info("run %s: call id %r was used already; %s runs as %r", run_id, call.id, call.name, fresh)
            call = attrs.evolve(call, id=fresh)
        taken.add(call.id)
        out.append(call)
    return tuple(out)


def fresh_id(original: str, taken: set[str]) -> str:
    """``<original>_2`` (``_3``, ...): recognisably the same call's, unused in the run, at most 40 chars."""
    n = 2
    while True:
        suffix = f"_{n}"
        fresh = (original or "call")[: _MAX_CALL_ID - len(suffix)] + suffix
        if fresh not in taken:
            return fresh
        n += 1
