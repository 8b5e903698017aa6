"""Events on their way from the task making them to the one reading them: one writer, one reader, a buffer.

A streamed answer's events go from its feed to its consumer through one (``gateway.ProviderStream``), and a
run's events from the run to its ``agent.stream`` handle through another (unbounded, written synchronously).

anyio's memory object stream serves any number of senders and receivers, and every receive pays for
it: a full checkpoint, a ``WouldBlock`` raised and caught (its traceback kept while the receiver
waits), an event registered in two tables; its state holds a ``deque`` and two ``OrderedDict``\\ s.
A stream has exactly one writer and one reader, so its channel is a list and at most one waiting party
on each side.  At 10,000 concurrent streams
(W12) that is ~2 KB less a live stream and a receive that, with an event already buffered, does not
leave the task.

Semantics, as a memory object stream's with ``max_buffer_size=capacity`` where it matters here:

* **Backpressure**: ``send`` returns at once while the buffer holds at most ``capacity`` items;
  otherwise it waits until the reader has taken enough.  ``capacity=0`` is a rendezvous: every send
  waits until its item has been received.
* **Order and completeness**: items are received in the order sent; nothing is dropped unless the
  reader leaves.  A send cancelled while it waits for room has already put its item in the buffer
  (the reader will see it): the writer here is a feed whose cancellation ends the stream anyway.
* **Ends**: the writer's :meth:`Channel.close_writing` lets the reader drain the buffer and then get
  ``anyio.EndOfStream``; the reader's :meth:`Channel.close_reading` drops the buffer, and the writer's
  next (or waiting) send raises ``anyio.BrokenResourceError``; a receive after it raises
  ``anyio.ClosedResourceError``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio
import anyio.lowlevel

from ._backend import backend_function, one_shot_event, running_trio

__all__ = ["Channel", "open_channel"]

_READER, _WRITER = 0, 1  # the sides, as indexes of Channel._parked


class _Event(Protocol):
    def set(self) -> None: ...

    async def wait(self) -> None: ...


class Channel:
    """One writer, one reader, a buffer of ``capacity`` items (see the module).

    :param capacity: items the writer may run ahead of the reader (``>= 0``; ``math.inf``: unbounded).
    :param new_event: makes the event a waiting side parks on (the running backend's ``Event`` class).
    :param checkpoint: the running backend's ``checkpoint_if_cancelled``: what a receive of an
        already buffered item awaits.
    """

    __slots__ = ("_buffer", "_capacity", "_checkpoint", "_done", "_left", "_new_event", "_parked")

    def __init__(
        self, capacity: float, new_event: Callable[[], _Event], checkpoint: Callable[[], Awaitable[None]]
    ) -> None:
        self._buffer: list[Any] = []
        self._capacity = capacity
        self._new_event = new_event
        self._checkpoint = checkpoint
        # The event each side waits on while it waits ([_READER]: for an item, [_WRITER]: for room), else None.
        self._parked: list[_Event | None] = [None, None]
        self._done = False  # the writer has finished
        self._left = False  # the reader has left

    async def send(self, item: Any) -> None:
        """Put ``item`` in the buffer; wait while the buffer is over its capacity.

        :raises anyio.BrokenResourceError: the reader has left (before, or while this waited).

        Cancellation: a cancellation point only while it waits for room, when ``item`` is already
        buffered (see the module).
        """
        if self._left:
            raise anyio.BrokenResourceError
        buffer = self._buffer
        buffer.append(item)
        self._wake(_READER)
        while len(buffer) > self._capacity:
            await self._park(_WRITER)
            if self._left:
                raise anyio.BrokenResourceError

    def send_nowait(self, item: Any) -> None:
        """Put ``item`` in the buffer if it holds fewer than ``capacity`` items (never waits).

        :raises anyio.BrokenResourceError: the reader has left.
        :raises anyio.WouldBlock: the buffer is full.
        """
        if self._left:
            raise anyio.BrokenResourceError
        if len(self._buffer) >= self._capacity:
            raise anyio.WouldBlock
        self._buffer.append(item)
        self._wake(_READER)

    def close_writing(self) -> None:
        """The writer is done: the reader gets what is buffered, then ``anyio.EndOfStream``.  Idempotent."""
        self._done = True
        self._wake(_READER)

    async def receive(self) -> Any:
        """The next item.

        :raises anyio.EndOfStream: the writer is done and every item has been received.
        :raises anyio.ClosedResourceError: the reader has left (:meth:`close_reading`).

        Cancellation: a cancellation point (with an item buffered, it does not yield to other
        tasks); a cancelled receive takes nothing from the buffer.
        """
        buffer = self._buffer
        if buffer:
            await self._checkpoint()
        while not buffer:
            if self._left:
                raise anyio.ClosedResourceError
            if self._done:
                raise anyio.EndOfStream
            await self._park(_READER)
        return self.receive_nowait()

    def receive_nowait(self) -> Any:
        """The next item if one is buffered (never waits).

        :raises anyio.WouldBlock: none is, and the writer is not done.
        :raises anyio.EndOfStream: the writer is done and every item has been received.
        :raises anyio.ClosedResourceError: the reader has left.
        """
        if self._left:
            raise anyio.ClosedResourceError
        buffer = self._buffer
        if not buffer:
            raise anyio.EndOfStream if self._done else anyio.WouldBlock
        item = buffer.pop(0)
        if len(buffer) <= self._capacity:
            self._wake(_WRITER)
        return item

    def close_reading(self) -> None:
        """The reader leaves: the buffer is dropped; the writer's next or waiting send raises.  Idempotent."""
        self._left = True
        self._buffer.clear()
        self._wake(_WRITER)

    def _wake(self, side: int) -> None:
        event = self._parked[side]
        if event is not None:
            self._parked[side] = None
            event.set()

    async def _park(self, side: int) -> None:
        """Wait until the other side wakes ``side`` (or the wait is cancelled: nothing is taken or lost)."""
        event = self._parked[side] = self._new_event()
        try:
            await event.wait()
        finally:
            if self._parked[side] is event:
                self._parked[side] = None


#: The running backend's parts of a channel (its one-shot event, its ``checkpoint_if_cancelled``), found once
#: per backend: both are the backend's own classes and functions, the same in every loop of it.
_PARTS: dict[bool, tuple[Callable[[], _Event], Callable[[], Awaitable[None]]]] = {}


def open_channel(capacity: float) -> Channel:
    """A :class:`Channel` of ``capacity`` for the running backend.  Call it inside the event loop."""
    trio = running_trio()
    parts = _PARTS.get(trio)
    if parts is None:
        parts = _PARTS[trio] = (
            one_shot_event(),
            backend_function("checkpoint_if_cancelled", anyio.lowlevel.checkpoint_if_cancelled),
        )
    return Channel(capacity, *parts)
