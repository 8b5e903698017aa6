"""The h11 sender's socket failures as httpx's exceptions, each with the original as its cause.

One helper for the three places that do socket I/O for the sender (:mod:`.h11_connection` through
anyio's streams, :mod:`._trio_direct`, :mod:`._asyncio_direct`), so the three say it alike.
"""

from __future__ import annotations

import httpx

__all__ = ["transport_error"]


def transport_error(kind: type[httpx.TransportError], text: str, cause: BaseException) -> httpx.TransportError:
    """``kind("{text}: {cause}")`` caused by ``cause`` (raise it plainly or from it: ``from None`` drops it)."""
    err = kind(f"{text}: {str(cause) or type(cause).__name__}")
    err.__cause__ = cause
    return err
