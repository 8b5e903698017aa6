"""Cause chains without credentials: a foreign exception is kept as a cause only when none of its texts holds one.

Where the library wraps a foreign exception (httpx's, h11's, aiohttp's) in one of its own errors, the
foreign one becomes the ``__cause__`` — and every traceback, ``logger.exception`` and error reporter
prints the whole chain.  :func:`scrub_chain` is what the wrapping code assigns instead of the bare
exception: the exception itself when its chain is clean, else a chain of
:class:`~agentactors.errors.RedactedException` stand-ins that keep what helps debugging (types,
messages with credentials removed, tracebacks as redacted text) and drop the objects that held the secret.

It lives here, not in :mod:`agentactors.redaction` (which knows text, and which the error tree itself
imports) nor in :mod:`agentactors.errors` (the tree: the classes, not what is done with foreign
exceptions); ``agentactors.errors.scrub_chain`` is its public name, served lazily (agentactors._deprecate).
"""

from __future__ import annotations

import traceback

from .errors import AgentActorsError, RedactedException, Signal
from .redaction import redact

__all__ = ["scrub_chain"]

# The package's own exceptions: their texts are redacted when they are made, so they are kept as they are.
_OURS = (AgentActorsError, Signal, RedactedException)


def scrub_chain(exc: BaseException) -> BaseException:
    """``exc`` for use as a cause: itself if no text in its chain holds a credential, else a stand-in.

    The chain is ``exc``, its ``__cause__`` and its shown ``__context__``, recursively; the
    texts are each link's ``str``, ``repr`` and notes.  When any of them changes under
    :func:`redact`, every link is replaced by a :class:`RedactedException` (chained the
    same way), so no object that held the secret stays reachable.  The library's own
    exceptions (its errors, signals and stand-ins) are returned as they are: their texts are
    redacted when they are made.
    """
    if isinstance(exc, _OURS) or _chain_is_clean(exc):
        return exc
    return _stand_in(exc, set())


def _links(exc: BaseException) -> list[BaseException]:
    seen: set[int] = set()
    out: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        out.append(cur)
        if cur.__cause__ is not None:
            todo.append(cur.__cause__)
        elif cur.__context__ is not None and not cur.__suppress_context__:
            todo.append(cur.__context__)
    return out


def _texts(exc: BaseException) -> list[str]:
    texts = [str(exc), repr(exc)]
    texts += [str(n) for n in getattr(exc, "__notes__", None) or ()]
    return texts


def _safe_texts(exc: BaseException) -> list[str]:
    try:
        return _texts(exc)
    except Exception:  # an exception whose __str__ raises: nothing to show, nothing to leak
        return []


def _chain_is_clean(exc: BaseException) -> bool:
    return all(redact(text) == text for link in _links(exc) for text in _safe_texts(link))


def _stand_in(exc: BaseException, seen: set[int]) -> RedactedException:
    seen.add(id(exc))
    kind = type(exc)
    texts = _safe_texts(exc)
    err = RedactedException(f"{kind.__module__}.{kind.__qualname__}", redact(texts[0]) if texts else "")
    if exc.__traceback__ is not None:
        frames = "".join(traceback.format_tb(exc.__traceback__))
        err.add_note("original traceback (credentials removed):\n" + redact(frames).rstrip())
    nxt = exc.__cause__
    if nxt is None and not exc.__suppress_context__:
        nxt = exc.__context__
    if nxt is not None and id(nxt) not in seen:
        err.__cause__ = nxt if isinstance(nxt, _OURS) else _stand_in(nxt, seen)
    return err
