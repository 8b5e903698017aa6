"""Big final answers are read and checked in a worker thread, so the event loop keeps serving other runs.

The final check of a typed answer — parse its JSON, walk it against the depth and size policy, validate it
against the schema, convert it into ``T`` — is pure CPU work proportional to the answer's size: about a
second for a 1 MB list on an idle two-core machine, all of it holding the event loop (every other run,
stream and heartbeat of the process stalled meanwhile).  Past :data:`INLINE_LIMIT` the work goes to a
worker thread (``anyio.to_thread``); the loop thread keeps running between the interpreter's switches.
Small answers — nearly all of them — stay inline: a thread hop costs more than checking a few KB.

The work is pure (it reads the answer, builds the value), so a cancelled caller leaves at once and the
thread's late result is dropped (``abandon_on_cancel``).  The output validator (``output_validator=``)
is the user's code and always runs on the loop, after the check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio.to_thread

__all__ = ["INLINE_LIMIT", "heavy_text", "heavy_value", "off_loop"]

T = TypeVar("T")

#: Answers larger than this (characters of text; characters and items of a call's arguments) are checked
#: in a worker thread.  16 KB checks in a few milliseconds; the thread hop is a fraction of one.
INLINE_LIMIT: Final = 16 * 1024


def heavy_text(text: str | None) -> bool:
    """Whether checking ``text`` belongs in a worker thread."""
    return text is not None and len(text) > INLINE_LIMIT


def heavy_value(value: Any) -> bool:
    """Whether checking ``value`` (a call's parsed arguments) belongs in a worker thread.

    A walk that stops as soon as it has seen :data:`INLINE_LIMIT` worth (an item counts one, a string or
    key its length): bounded work, whatever the value's size or depth.
    """
    budget = INLINE_LIMIT
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            budget -= len(item)
        elif isinstance(item, dict | list | tuple):
            budget -= len(item)  # before the items are looked at: a huge container costs no walk
            if budget < 0:
                return True
            if isinstance(item, dict):
                budget -= sum(len(key) if isinstance(key, str) else 1 for key in item)
                stack.extend(item.values())
            else:
                stack.extend(item)
        budget -= 1
        if budget < 0:
            return True
    return False


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread (pure work: a cancelled caller does not wait for it).

    Cancellation: propagates at once; the thread is abandoned (it runs ``fn`` to its end, its result
    discarded): ``fn`` is pure work, with nothing to undo.
    """
    return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)
