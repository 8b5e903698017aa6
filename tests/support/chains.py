"""Everything a person or a tool can read of an exception, for the tests that check no secret is in it."""

from __future__ import annotations

import traceback


def chain_texts(exc: BaseException) -> list[str]:
    """``exc``'s formatted traceback, and of every exception reachable from it (causes, contexts, group
    members): its repr, str, args, notes and attributes."""
    out = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    todo = [exc]
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        out += [repr(cur), str(cur), repr(cur.args), *map(str, getattr(cur, "__notes__", None) or ())]
        out.append(repr(getattr(cur, "__dict__", {})))
        todo += [e for e in (cur.__cause__, cur.__context__) if e is not None]
        todo += list(getattr(cur, "exceptions", ()))
    return out


def leaks(exc: BaseException, *secrets: str) -> list[str]:
    """The texts of :func:`chain_texts` that hold one of ``secrets`` (empty: none does)."""
    return [text for text in chain_texts(exc) if any(secret in text for secret in secrets)]
