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

import sys
import traceback

from .errors import AgentActorsError, RedactedException, Signal
from .redaction import redact

__all__ = ["scrub_chain"]

# The package's own exceptions: their texts are redacted when they are made, so they are kept as they are.
_OURS = (AgentActorsError, Signal, RedactedException)


def scrub_chain(exc: BaseException) -> BaseException:
    """``exc`` for use as a cause: itself if no text in its chain holds a credential, else a stand-in.

    The chain is ``exc``, its ``__cause__`` and its shown ``__context__``, recursively, and the
    sub-exceptions of every exception group in it (a task group's failure: a traceback prints
    each one with its own chain); the texts are each link's ``str``, ``repr`` and notes, and the str and
    bytes values it keeps in ``args`` and attributes (one past 4096 characters counts as unclean).  When any of
    them changes under :func:`redact`, every link is replaced by a :class:`RedactedException` (chained the
    same way), so no object that held the secret stays reachable.  The library's own
    exceptions (its errors, signals and stand-ins) are returned as they are: their texts are
    redacted when they are made.  A group's stand-in is not a group: it keeps each sub-exception as
    a note, its whole traceback (chain included) as redacted text.
    """
    if isinstance(exc, _OURS):
        return exc
    _detach_requests(exc)
    if _chain_is_clean(exc):
        return exc
    return _stand_in(exc)


def _detach_requests(exc: BaseException) -> None:
    """Give every httpx error in ``exc``'s chain a bare copy of its request: method and URL, no query, no headers.

    An httpx error kept as a cause is worth keeping as itself (``isinstance(cause, httpx.TransportError)`` is how
    callers tell a network failure), but it holds the request it failed on — its headers (the API key, the
    bearer token, a SigV4 signature) and body — which a pickle (a Ray driver's copy) or a debugger shows though
    its message is clean.  (No httpx error exists unless httpx was imported: nothing is imported here.)
    """
    httpx = sys.modules.get("httpx")
    if httpx is None:
        return
    for link in _links(exc):
        if not isinstance(link, httpx.HTTPError):
            continue
        try:
            request = link.request
        except RuntimeError:  # an error made without one
            continue
        url = request.url
        bare = httpx.URL(scheme=url.scheme, host=url.host, port=url.port, path=url.path)
        link.request = httpx.Request(request.method, bare)


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
        if isinstance(cur, BaseExceptionGroup):
            todo.extend(cur.exceptions)
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


# A text an exception holds beyond its message (``JSONDecodeError.doc``: the whole document it failed on, up
# to a 16 MiB SSE event; ``UnicodeDecodeError.object``: the bytes) longer than this is not searched: the link
# is replaced by a stand-in whatever it holds, so checking a cause costs O(this) however large the body was.
_HELD_LIMIT = 4096


def _holds_no_credential(exc: BaseException) -> bool:
    """Whether the str and bytes values ``exc`` keeps in its ``args`` and attributes are clean.

    Its ``str`` and ``repr`` do not show them all: ``json.JSONDecodeError`` keeps the document it failed on
    in ``.doc`` (and in what ``pickle`` ships), while its message says only where it failed.  A vendor body
    that echoed a key back, decoded by a stream decoder, made a clean-looking cause that held the key.
    """
    try:
        held = [*exc.args, *getattr(exc, "__dict__", {}).values()]
    except Exception:  # an exception whose attributes cannot be listed: nothing to show, nothing to trust
        return False
    for value in held:
        if isinstance(value, bytes | bytearray):
            if len(value) > _HELD_LIMIT:
                return False
            value = bytes(value).decode("utf-8", "replace")
        if isinstance(value, str) and (len(value) > _HELD_LIMIT or redact(value) != value):
            return False
    return True


def _chain_is_clean(exc: BaseException) -> bool:
    return all(
        _holds_no_credential(link) and all(redact(text) == text for text in _safe_texts(link))
        for link in _links(exc)
    )


def _stand_in(exc: BaseException) -> RedactedException:
    """The chain from ``exc`` on, each link a stand-in, up to a link of ours (kept) or one seen before.

    A loop along the chain, not recursion: a chain of thousands of links is replaced like a short one.
    """
    head = prev = _one_stand_in(exc)
    seen = {id(exc)}
    cur = _next_link(exc)
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, _OURS):
            prev.__cause__ = cur
            break
        seen.add(id(cur))
        err = _one_stand_in(cur)
        prev.__cause__ = err
        prev = err
        cur = _next_link(cur)
    return head


def _next_link(exc: BaseException) -> BaseException | None:
    if exc.__cause__ is not None:
        return exc.__cause__
    return None if exc.__suppress_context__ else exc.__context__


def _one_stand_in(exc: BaseException) -> RedactedException:
    kind = type(exc)
    texts = _safe_texts(exc)
    err = RedactedException(f"{kind.__module__}.{kind.__qualname__}", redact(texts[0]) if texts else "")
    if exc.__traceback__ is not None:
        frames = "".join(traceback.format_tb(exc.__traceback__))
        err.add_note("original traceback (credentials removed):\n" + redact(frames).rstrip())
    if isinstance(exc, BaseExceptionGroup):
        # The stand-in cannot hold the sub-exceptions (they may hold the secret): their printed form can.
        for number, sub in enumerate(exc.exceptions, 1):
            try:
                shown = "".join(traceback.format_exception(sub))
            except Exception:  # a sub-exception that cannot even be printed: its type is what is left
                shown = f"{type(sub).__qualname__} (it could not be printed)"
            err.add_note(f"sub-exception {number} (credentials removed):\n" + redact(shown).rstrip())
    return err
