"""The h11 sender's socket failures as httpx's exceptions, each with the original as its cause.

One helper for the places that turn the sender's failures into httpx's (:mod:`.h11_connection`: connecting
and the parser's refusals; :mod:`._trio_direct` and :mod:`._asyncio_direct`: socket I/O), so they say it alike.
"""

from __future__ import annotations

import httpx

__all__ = ["transport_error"]


def transport_error(kind: type[httpx.TransportError], text: str, cause: BaseException) -> httpx.TransportError:
    """``kind("{text}: {cause}")`` caused by ``cause`` (raise it plainly or from it: ``from None`` drops it)."""
    err = kind(f"{text}: {_said(cause)}")
    err.__cause__ = cause
    return err


def _said(cause: BaseException) -> str:
    """What ``cause`` says; for a wrapper that says nothing (anyio's ``BrokenResourceError`` over trio's
    TLS stream), what the error under it says — ``Connection reset by peer``, not only the wrapper's name."""
    text = str(cause)
    if text:
        return text
    inner = cause.__cause__ or cause.__context__
    for _ in range(3):  # a chain, not a loop: a few links at most
        if inner is None:
            break
        if str(inner):
            return f"{type(cause).__name__} ({type(inner).__name__}: {inner})"
        inner = inner.__cause__ or inner.__context__
    return type(cause).__name__
