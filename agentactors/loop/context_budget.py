"""Keeping a request within ``context_budget_chars``: oldest tool results give way first.

:func:`fit_to_budget` returns the messages to *send*; the run's own conversation
(``RunResult.messages``) keeps every message whole, so the record stays complete.

Rules (``docs/loop.md``, "Context budget"):

1. Never touched: the system message(s), the first user message and the last
   :data:`KEEP_LAST` messages (extended backwards so that a tool-call message and
   its results stay together).
2. First, tool results are trimmed oldest first to a verbatim head plus a stub
   saying how much was removed, until the total fits.
3. If that is not enough, whole older exchanges are dropped oldest first; an
   assistant message that made calls goes together with all of its results, so
   call/result pairs are never broken.

The size of a message is its content plus its calls' argument text; the budget
is best effort (the protected messages alone may exceed it).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message

__all__ = ["HEAD_CHARS", "KEEP_LAST", "fit_to_budget", "message_chars", "stub_text"]

#: The most recent messages are never trimmed or dropped.
KEEP_LAST = 6
#: A trimmed tool result keeps this many leading characters verbatim.
HEAD_CHARS = 200


def stub_text(removed: int) -> str:
    return f"\n[trimmed: {removed:,} more chars of this earlier tool result were removed to fit the context budget]"


def message_chars(message: Message) -> int:
    size = len(message.content)
    for call in message.tool_calls:
        size += len(call.name) + len(call.arguments_json)
    return size


def _head(text: str) -> str:
    """The first :data:`HEAD_CHARS` characters of ``text``, one fewer when the cut would split a surrogate pair
    written as two code points (half of one is a lone surrogate, which no UTF-8 request body carries)."""
    head = text[:HEAD_CHARS]
    return head[:-1] if head and "\ud800" <= head[-1] <= "\udbff" else head


def _protected(messages: Sequence[Message]) -> list[bool]:
    n = len(messages)
    keep = [False] * n
    first_user_seen = False
    for i, m in enumerate(messages):
        if m.role == "system":
            keep[i] = True
        elif m.role == "user" and not first_user_seen:
            keep[i] = True
            first_user_seen = True
    tail = max(0, n - KEEP_LAST)
    # A tail starting among tool results would split them from their call: move it back to the call.
    while tail > 0 and messages[tail].role == "tool":
        tail -= 1
    for i in range(tail, n):
        keep[i] = True
    return keep


def _groups(messages: Sequence[Message]) -> list[list[int]]:
    """Indices grouped so an assistant message with calls travels with the tool results after it."""
    groups: list[list[int]] = []
    for i, m in enumerate(messages):
        if m.role == "tool" and groups and messages[groups[-1][0]].tool_calls:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def fit_to_budget(messages: Sequence[Message], budget_chars: int) -> tuple[Message, ...]:
    """The messages to send so that their size is at most ``budget_chars`` where the rules allow.

    Returns the input unchanged (as a tuple) when it already fits.  Never
    raises for any input; never alters a protected message.
    """
    sizes = [message_chars(m) for m in messages]
    total = sum(sizes)
    if total <= budget_chars:
        return tuple(messages)
    keep = _protected(messages)
    out: list[Message | None] = list(messages)

    # Phase 1: trim tool results, oldest first.
    for i, m in enumerate(messages):
        if total <= budget_chars:
            break
        if keep[i] or m.role != "tool":
            continue
        head = _head(m.content)
        removed = len(m.content) - len(head)
        stub = stub_text(removed)
        if removed <= len(stub):
            continue  # trimming would not make it smaller
        trimmed = Message.tool(m.tool_call_id or "", head + stub, m.name, is_error=m.is_error)
        total -= sizes[i] - len(trimmed.content)
        sizes[i] = len(trimmed.content)
        out[i] = trimmed

    # Phase 2: drop whole unprotected groups, oldest first.
    if total > budget_chars:
        for group in _groups(messages):
            if total <= budget_chars:
                break
            if any(keep[i] for i in group):
                continue
            for i in group:
                total -= sizes[i]
                out[i] = None
    return tuple(m for m in out if m is not None)
