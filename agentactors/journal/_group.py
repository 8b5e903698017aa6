"""Group commit: the commits of concurrent runs that queue for a journal's connection go in one transaction.

A journal commits each step before the run goes on, in a worker thread (the database drivers block).  When many
runs are live, their commits arrive together and used to queue for the connection one by one — a thread hop and a
transaction each.  Here the first commit to find the connection free takes it and applies, in one thread hop and
one transaction, every commit queued by then; the ones that arrive meanwhile wait for the next batch, led by the
first of them.  Each commit keeps its own outcome: it runs under its own savepoint, so one that fails (a lease
lost, a constraint) rolls back alone and raises in its own run, and the others are committed.  A run still waits
for *its* commit to be durable before it goes on — batching changes how many transactions carry the commits,
never whether a step is committed before the next one starts.  Alone (one run at a time) a commit is what it was:
one hop, one transaction, no savepoint.

Waiting is shielded from cancellation, as the thread call it replaces was: a commit that started either happens
entirely or not at all, and its run learns which.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import anyio
from anyio.lowlevel import RunVar

__all__ = ["GroupCommit"]

T = TypeVar("T")


class _Slot:
    __slots__ = ("done", "error", "lead")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.error: BaseException | None = None
        self.lead = False  # woken to lead the next batch, not because its commit is done


class _Queue(Generic[T]):
    __slots__ = ("busy", "waiting")

    def __init__(self) -> None:
        self.waiting: list[tuple[T, _Slot]] = []
        self.busy = False


class GroupCommit(Generic[T]):
    """Batches ``apply(items) -> errors`` calls (one per batch, in the journal's worker thread; see the module).

    :param apply: awaits the worker: applies the items in one transaction, each under its own savepoint, and
        answers each one's exception or ``None``, in order.
    """

    __slots__ = ("_queues", "apply")

    def __init__(self, apply: Callable[[list[T]], Awaitable[list[BaseException | None]]], name: str) -> None:
        self.apply = apply
        self._queues: RunVar[_Queue[T]] = RunVar(name)  # one queue per event loop, like the limiter it feeds

    async def commit(self, item: T) -> None:
        """Apply ``item`` (with whatever else is queued); return once it is committed, or raise its error."""
        queue = self._queues.get(None)
        if queue is None:
            queue = _Queue()
            self._queues.set(queue)
        if not queue.busy:  # alone: no slot, no event — the commit is what it was before batching
            queue.busy = True
            with anyio.CancelScope(shield=True):
                try:
                    errors = await self.apply([item])
                finally:
                    self._hand_over(queue)
            if errors[0] is not None:
                raise errors[0]
            return
        slot = _Slot()
        queue.waiting.append((item, slot))
        with anyio.CancelScope(shield=True):  # queued behind a batch being applied: wait for it (or to lead)
            await slot.done.wait()
            if slot.lead:
                slot.lead = False
                await self._lead(queue)
        if slot.error is not None:
            raise slot.error

    async def _lead(self, queue: _Queue[T]) -> None:
        """Apply everything queued now, then hand the lead to the first commit queued meanwhile."""
        batch, queue.waiting = queue.waiting, []
        try:
            errors: list[Any] = list(await self.apply([item for item, _ in batch]))
        except BaseException as exc:  # the transaction as a whole failed: every commit in it did
            errors = [exc] * len(batch)
        for (_, slot), error in zip(batch, errors, strict=True):
            slot.error = error
            slot.done.set()
        self._hand_over(queue)

    @staticmethod
    def _hand_over(queue: _Queue[T]) -> None:
        """Wake the first commit queued meanwhile to lead the next batch, or free the connection."""
        if queue.waiting:
            nxt = queue.waiting[0][1]
            nxt.lead = True
            nxt.done.set()
            nxt.done = anyio.Event()  # waited on again for its own commit, by the batch it leads
        else:
            queue.busy = False
