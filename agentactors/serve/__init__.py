"""Agents as endpoints.

``asgi``
    :func:`lifespan`: an ASGI lifespan that owns a :class:`~agentactors.Runtime` (Starlette, FastAPI).
"""

from __future__ import annotations

from .asgi import lifespan

__all__ = ["lifespan"]
