"""The call-id rule: every tool call of a run has an id of its own (``docs/loop.md``).

Two calls with one id would both run (two side effects for one id) and the next request would carry
two results for it, which vendors reject.  So a call that reuses an id — one already in the run's
conversation (the caller's history included) or earlier in the same step — gets a fresh one before
anything runs: ``<id>_2`` (``_3``, ...), recognisably the same call's, at most 40 characters.  So does a
call whose id no vendor takes back: an empty one (some OpenAI-compatible servers send none) or one over
40 characters.  The assistant message, the executor, the results and ``RunResult.tool_calls`` all carry
the new id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import attrs

from ..events import EventSink
from ..messages import Message, ToolCall

__all__ = ["fresh_id", "ids_in", "is_fresh_id_of", "unique_ids"]

log = logging.getLogger("agentactors.loop")

#: Vendors cap call ids (OpenAI at 40 characters); a fresh id keeps within it.
_MAX_CALL_ID = 40


def ids_in(conversation: Iterable[Message]) -> set[str]:
    """The ids of the calls ``conversation`` holds: what a run's first tool step starts from."""
    return {c.id for m in conversation for c in m.tool_calls}


def unique_ids(
    calls: Sequence[ToolCall], taken: set[str], *, sink: EventSink | None = None, run_id: str | None = None
) -> Sequence[ToolCall]:
    """``calls`` with every id unique and sendable: a call whose id is in ``taken`` (or earlier in ``calls``),
    empty, or over 40 characters gets a fresh one.

    ``taken`` gains the ids of ``calls`` as they are returned.  A renamed call is reported to ``sink``
    (``tools.duplicate_call_id``; ``tools.invalid_call_id`` for an id no vendor takes back) and logged
    under ``run_id``.
    """
    if len(calls) == 1:  # the common case: nothing to rename
        only = calls[0].id
        if only not in taken and 0 < len(only) <= _MAX_CALL_ID:
            taken.add(only)
            return calls
    out: list[ToolCall] = []
    counters: dict[str, int] = {}  # per id renamed in this step: the suffix to try next
    for call in calls:
        cid = call.id
        sendable = 0 < len(cid) <= _MAX_CALL_ID
        if not sendable or cid in taken:
            fresh = fresh_id(cid, taken, counters)
            if sink is not None:
                if sendable:
                    sink.emit("tools.duplicate_call_id", call_id=cid, renamed_to=fresh, name=call.name)
                else:  # the id itself may be huge: a record carries its head and its length
                    sink.emit(
                        "tools.invalid_call_id", call_id=_head(cid), length=len(cid), renamed_to=fresh, name=call.name
                    )
            log.info(
                "run %s: call id %r is used already or unsendable; %s runs as %r", run_id, _head(cid), call.name, fresh
            )
            call = attrs.evolve(call, id=fresh)
        taken.add(call.id)
        out.append(call)
    return tuple(out)


def fresh_id(original: str, taken: set[str], counters: dict[str, int] | None = None) -> str:
    """``<original>_2`` (``_3``, ...): recognisably the same call's, unused in the run, at most 40 chars.

    ``counters`` (per original id: the suffix to try next) carries the count from one rename of an id to
    the next, so many calls sharing one id are renamed in linear time, not each counting up from ``_2``.
    """
    n = counters.get(original, 2) if counters is not None else 2
    while True:
        suffix = f"_{n}"
        fresh = (original or "call")[: _MAX_CALL_ID - len(suffix)] + suffix
        n += 1
        if fresh not in taken:
            if counters is not None:
                counters[original] = n
            return fresh


def is_fresh_id_of(call_id: str, originals: Iterable[str]) -> bool:
    """Whether ``call_id`` is a fresh id :func:`fresh_id` gives one of ``originals`` (``<original>_<n>``, cut to
    fit): how a stored step's results are matched with its calls (the journal's damage check)."""
    head, sep, n = call_id.rpartition("_")
    if not sep or not n.isdigit():
        return False
    cut = _MAX_CALL_ID - len(sep + n)
    return any((original or "call")[:cut] == head for original in originals)


def _head(call_id: str) -> str:
    """``call_id`` as a record or a log line shows it: whole up to 40 characters, else its head and an ellipsis."""
    return call_id if len(call_id) <= _MAX_CALL_ID else call_id[:_MAX_CALL_ID] + "…"
