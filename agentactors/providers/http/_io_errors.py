"""The h11 sender's socket failures as httpx's exceptions, each with the original as its cause.

One helper for the places that turn the sender's failures into httpx's (:mod:`.h11_connection`: connecting
and the parser's refusals; :mod:`._trio_direct` and :mod:`._asyncio_direct`: socket I/O), so they say it alike.
"""

from __future__ import annotations

import httpx

__all__ = ["transport_error"]


def transport_error(kind: type[httpx.TransportError], text: str, cause: BaseException) -> httpx.TransportError:
    """``kind("{text}: {cause}")`` caused by ``cause`` (raise it plainly or from it: ``from None`` drops it)."""
    err = kind(f"{text}: {str(cause) or type(cause).__name__}")
    err.__cause__ = cause
    return err
