"""anyio's asyncio cancel scope, ~0.3 KB lighter: the class the runtime and its task groups make scopes of.

anyio's asyncio ``CancelScope`` keeps two sets: the tasks directly inside it (in practice the one
task that entered it) and the scopes nested in it (in practice none, or the one the same task
entered next).  An empty set is 216 bytes and stays that size up to four members, so a scope is
~0.58 KB where its other fields are 0.15.  A waiting run holds two scopes — its task's, from the
batch or runtime task group it runs in, and its frame's (:mod:`.actors.frame`) — and W3's 10,000
waiting runs hold 20,000.

:func:`scope_class` returns a subclass whose two collections are lists with ``set``'s methods
(:class:`_Few`: 56 bytes empty, 88 with its one member) and which is otherwise anyio's class,
unchanged: every method, every field, every check is anyio's.  It is a subclass, so anyio's own code
(``_deliver_cancellation``, ``TaskGroup``, ``from_thread``, ``current_effective_deadline``) and
:func:`~._backend.scope_checkpoint`'s walk treat it as one of theirs.  What anyio does with these two
collections: ``add``, ``discard``, ``remove``, membership, iteration and truth — all of which
:class:`_Few` does as ``set`` does them, members (tasks and scopes) compared by identity.  Its ``add``
appends without looking (``list.append``, a C call where a check would be a Python one, on every scope
entered and left): anyio only ever adds a member that is not there — a task entering its scope, a
scope entering its parent, a task back in its parent scope when the scope it had entered there (and
was taken out of the parent for) is left, a new task.

It depends on anyio's private layout, so it is checked before it is used, once per process: the
backend class's ``__slots__`` must be the ones this was written against (anyio 4.16) and a stock
scope's fields must all equal a lean one's except the two collections, which must be ``set``\\ s.
Any difference — a later anyio — and :func:`scope_class` returns anyio's own class: heavier, never
different.  trio's scopes are trio's own (no sets): anyio's class there too.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import anyio

from ._backend import running_trio

__all__ = ["scope_class"]

# The slots of anyio's asyncio CancelScope this module was written against (anyio 4.16).
_EXPECTED_SLOTS = frozenset(
    {
        "_active",
        "_cancel_called",
        "_cancel_handle",
        "_cancel_reason",
        "_cancelled_caught",
        "_cancelling_at_enter",
        "_child_scopes",
        "_deadline",
        "_host_task",
        "_parent_scope",
        "_pending_uncancellations",
        "_shield",
        "_tasks",
        "_timeout_handle",
    }
)

_resolved: Any = None  # the class scope_class() returns on asyncio, once checked


class _Few(list):  # type: ignore[type-arg]
    """A few members (tasks or scopes, by identity) with the ``set`` methods anyio's scope calls on them."""

    __slots__ = ()

    add = list.append  # (see the module: anyio adds only what is not there)

    def discard(self, item: Any) -> None:
        if item in self:
            self.remove(item)


def scope_class() -> Any:
    """The class to make cancel scopes of in the running event loop: anyio's, or its lean subclass (see the module).

    Call it inside the event loop (it tells the backend by the running one); call what it returns only
    inside loops of that backend.  Its instances are anyio cancel scopes in every respect.
    """
    global _resolved
    if running_trio():
        return type(anyio.CancelScope())
    if _resolved is None:
        _resolved = _checked(type(anyio.CancelScope()))
    return _resolved


def _checked(stock: type) -> type:
    """``stock``'s lean subclass when ``stock`` is laid out as expected, else ``stock`` (see the module)."""
    if frozenset(getattr(stock, "__slots__", ())) != _EXPECTED_SLOTS or "__init__" not in vars(stock):
        return stock
    lean = _lean_subclass(stock)
    try:
        plain, light = stock(deadline=5.0, shield=True), lean(deadline=5.0, shield=True)
    except Exception:
        return stock
    for name in _EXPECTED_SLOTS:
        mine, theirs = getattr(light, name, _MISSING), getattr(plain, name, _MISSING)
        if name in ("_tasks", "_child_scopes"):
            if type(theirs) is not set or theirs or type(mine) is not _Few:
                return stock
        elif mine != theirs or type(mine) is not type(theirs):
            return stock
    return lean


_MISSING = object()


def _lean_subclass(stock: Any) -> type:
    """The subclass of ``stock`` whose ``__init__`` is anyio 4.16's with :class:`_Few` for its two sets."""

    class LeanCancelScope(stock):  # type: ignore[misc]
        __slots__ = ()

    LeanCancelScope.__init__ = _lean_init  # type: ignore[method-assign]
    LeanCancelScope.__qualname__ = LeanCancelScope.__name__ = "CancelScope"
    LeanCancelScope.__module__ = __name__
    return LeanCancelScope


def _lean_init(self: Any, deadline: float = math.inf, shield: bool = False) -> None:
    """anyio 4.16's ``CancelScope.__init__``, field for field, but for the two collections (see the module)."""
    if math.isnan(deadline):
        raise ValueError("deadline must not be NaN")
    self._deadline = deadline
    self._shield = shield
    self._parent_scope = None
    self._child_scopes = _Few()
    self._cancel_called = False
    self._cancel_reason = None
    self._cancelled_caught = False
    self._active = False
    self._timeout_handle = None
    self._cancel_handle = None
    self._tasks = _Few()
    self._host_task = None
    self._cancelling_at_enter = 0
    self._pending_uncancellations = 0 if sys.version_info >= (3, 11) else None
