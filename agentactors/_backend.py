"""The running event loop's own anyio functions, found once instead of on every call.

anyio's top-level functions find the running backend on every call (``sniffio``, then a
table): ``anyio.lowlevel.checkpoint_if_cancelled()`` and ``anyio.current_time()`` pay it
before doing their work.  The kernel calls the first once per ask and the tool executor the
second twice per call, so the runtime resolves them once (as it resolves the backend's
``Event`` and ``CancelScope`` classes) and the hot paths call the backend's own function.

The backend class is read from its module's ``backend_class`` (as anyio finds it); should a
later anyio not have it there, the public function is used as it is: slower, never different.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

__all__ = ["backend_function"]

F = TypeVar("F", bound=Callable[..., Any])


def backend_function(name: str, public: F) -> F:
    """The running backend's own ``name`` — what ``public`` calls once it has found the backend — or ``public``.

    Call it inside the event loop whose backend it is for.
    """
    module = sys.modules.get(type(anyio.CancelScope()).__module__)
    backend = getattr(module, "backend_class", None)
    fn = getattr(backend, name, None)
    return fn if callable(fn) else public
