"""``spawn`` refuses an actor whose ``receive`` / ``on_start`` / ``on_stop`` is not an ``async def``.

It used to take one: ``def receive`` (a forgotten ``async``) failed every ask with
``AttributeError: 'int' object has no attribute 'send'``, and a sync ``on_start`` stopped the actor with a
different error on the direct path and in a worker.  The check looks through ``functools.partial``, a
callable object's ``__call__`` and a ``functools.wraps`` decorator, so the ways of writing an async hook
that worked are still taken.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentactors.actors import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class SyncReceive:
    def receive(self, message: Any) -> Any:  # forgot `async`
        return message


class SyncOnStart:
    def on_start(self) -> None:
        return None

    async def receive(self, message: Any) -> Any:
        return message


class SyncOnStop:
    def on_stop(self) -> None:
        return None

    async def receive(self, message: Any) -> Any:
        return message


class NotCallableOnStop:
    on_stop = 5

    async def receive(self, message: Any) -> Any:
        return message


class AwaitableReceive:
    """Returns an awaitable that is not a coroutine: the kernel drives handlers as coroutines."""

    def receive(self, message: Any) -> Awaitable[Any]:
        async def inner() -> Any:
            return message

        return _Wrapper(inner())


class _Wrapper:
    def __init__(self, coro: Any) -> None:
        self.coro = coro

    def __await__(self) -> Any:
        return self.coro.__await__()


@pytest.mark.parametrize("cls", [SyncReceive, SyncOnStart, SyncOnStop, NotCallableOnStop, AwaitableReceive])
@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("as_factory", [False, True])
async def test_spawn_refuses_a_hook_that_is_not_async(cls: type, direct: bool, as_factory: bool) -> None:
    async with Runtime() as rt:
        before = rt.stats().actors
        with pytest.raises(TypeError, match=rf"{cls.__name__}\.\w+.*async def"):
            rt.spawn(cls if as_factory else cls(), direct=direct)
        assert rt.stats().actors == before


async def _double(message: Any) -> Any:
    return message * 2


class _AsyncCall:
    async def __call__(self, message: Any) -> Any:
        return message * 2


def _wrapped(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(fn)
    def wrapper(*args: Any) -> Awaitable[Any]:  # a plain def that returns fn's coroutine
        return fn(*args)

    return wrapper


class Decorated:
    @_wrapped
    async def receive(self, message: Any) -> Any:
        return message * 2

    @_wrapped
    async def on_start(self) -> None:
        return None


class Assigned:
    async def _impl(self, message: Any) -> Any:
        return message * 2

    receive = _impl  # a class attribute assigned a function


class Partial:
    async def _impl(self, factor: int, message: Any) -> Any:
        return message * factor

    def __init__(self) -> None:
        self.receive = functools.partial(self._impl, 2)


class CallableObject:
    def __init__(self) -> None:
        self.receive = _AsyncCall()


class InstanceFunction:
    def __init__(self) -> None:
        self.receive = _double


@pytest.mark.parametrize("cls", [Decorated, Assigned, Partial, CallableObject, InstanceFunction])
@pytest.mark.parametrize("direct", [True, False])
async def test_spawn_takes_the_ways_of_writing_an_async_hook(cls: type, direct: bool) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(cls(), direct=direct)
        assert await ref.ask(21) == 42
