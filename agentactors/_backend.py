"""The running event loop's own anyio functions, found once instead of on every call.

anyio's top-level functions find the running backend on every call (``sniffio``, then a
table): ``anyio.lowlevel.checkpoint_if_cancelled()`` and ``anyio.current_time()`` pay it
before doing their work.  The kernel calls the first once per ask and the tool executor the
second twice per call, so the runtime resolves them once (as it resolves the backend's
``Event`` and ``CancelScope`` classes) and the hot paths call the backend's own function.

The backend class is read from its module's ``backend_class`` (as anyio finds it); should a
later anyio not have it there, the public function is used as it is: slower, never different.

:func:`scope_checkpoint` is ``checkpoint_if_cancelled`` for a task that knows its innermost cancel
scope (a run's loop, inside its frame): on asyncio anyio finds that scope through a per-task table
(``current_task()``, a weak-keyed lookup) before walking the scopes outwards; starting the walk from
the known scope does the same walk without the lookup — a good part of a zero-latency step's cost.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import anyio.lowlevel

__all__ = ["backend_function", "ignoring_scope", "scope_checkpoint"]

F = TypeVar("F", bound=Callable[..., Any])


def backend_function(name: str, public: F) -> F:
    """The running backend's own ``name`` — what ``public`` calls once it has found the backend — or ``public``.

    Call it inside the event loop whose backend it is for.
    """
    module = sys.modules.get(type(anyio.CancelScope()).__module__)
    backend = getattr(module, "backend_class", None)
    fn = getattr(backend, name, None)
    return fn if callable(fn) else public


def scope_checkpoint(checkpoint_if_cancelled: Callable[[], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
    """``check(scope)``: ``checkpoint_if_cancelled()`` for a task whose innermost cancel scope is ``scope``.

    Call it inside the event loop whose backend it is for, with that backend's ``checkpoint_if_cancelled``
    (:func:`backend_function`).  ``check(scope)`` is a checkpoint only when ``scope`` or a scope around it
    (up to the first shielded one) was cancelled — as anyio's function, which finds that innermost scope
    itself.  On asyncio the walk starts from ``scope``, through the parent link anyio's scopes keep
    (``_parent_scope``: anyio's own, read here only); a backend whose scopes have no such link (trio's
    are trio's own) gets ``checkpoint_if_cancelled`` itself, the argument ignored.

    The caller must pass the task's innermost scope: a scope entered inside it and cancelled would be missed.
    """
    scope_cls = type(anyio.CancelScope())
    if "_parent_scope" not in getattr(scope_cls, "__slots__", ()) or not all(
        isinstance(getattr(scope_cls, name, None), property) for name in ("cancel_called", "shield")
    ):
        return ignoring_scope(checkpoint_if_cancelled)
    return _walk_from


def ignoring_scope(checkpoint_if_cancelled: Callable[[], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
    """``checkpoint_if_cancelled`` as a ``check(scope)``: it finds the task's scopes itself, the argument ignored."""
    return lambda scope: checkpoint_if_cancelled()


async def _walk_from(scope: Any) -> None:
    """anyio's ``checkpoint_if_cancelled`` for asyncio, from ``scope`` outwards (see :func:`scope_checkpoint`)."""
    while scope is not None:
        if scope.cancel_called:
            await anyio.lowlevel.checkpoint()  # the cancellation is delivered here
            return
        if scope.shield:
            return
        scope = scope._parent_scope
