"""Plain examples of what the stack property (test_stack_properties.py) found, each on both backends, virtual time."""

from __future__ import annotations

import gc
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError, StreamInterruptedError
from agentactors.messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import with_fallback, with_hedge, with_timeout
from tests.support.resilience import REQ

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Broken:
    """A vendor whose SDK raises a foreign exception (not a ProviderError): on the call, or after ``events`` events."""

    name = "broken"
    default_model = "broken-1"

    def __init__(self, events: int = 0, delay: float = 0.0) -> None:
        self.events = events
        self.delay = delay

    async def complete(self, request: LLMRequest) -> LLMResponse:
        await anyio.sleep(self.delay)
        raise RuntimeError("the vendor's SDK broke")

    def stream(self, request: LLMRequest) -> Any:
        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def gen() -> AsyncIterator[StreamEvent]:
                await anyio.sleep(self.delay)
                for i in range(self.events):
                    yield TextDelta(f"<{i}>")
                raise RuntimeError("the vendor's SDK broke")

            events = gen()
            try:
                yield events
            finally:
                await events.aclose()  # type: ignore[attr-defined]

        return cm()

    async def aclose(self) -> None:
        pass


async def read_all(provider: Any) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    async with provider.stream(REQ) as events:
        async for event in events:
            out.append(event)
    return out


BOUNDS = [
    {"attempt": None, "first_event": None, "idle": 0.3},
    {"attempt": 1.0},
    {"first_event": 1.0},
    {"attempt": None, "first_event": None, "idle": None},
]


@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
async def test_with_timeout_raises_a_vendors_foreign_exception_as_a_provider_error(bounds: dict[str, Any]) -> None:
    # Every decorator raises ProviderErrors only (docs/resilience.md §1); with_timeout let a RuntimeError through.
    provider = with_timeout(Broken(), **bounds)
    with pytest.raises(ProviderError) as caught:
        await provider.complete(REQ)
    assert caught.value.kind is ErrorKind.request  # an unknown exception is a request fault
    with pytest.raises(ProviderError) as caught:
        await read_all(provider)
    assert caught.value.kind is ErrorKind.request
    assert not isinstance(caught.value, StreamInterruptedError)


@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
async def test_with_timeout_cuts_a_stream_failing_after_its_first_event_short(bounds: dict[str, Any]) -> None:
    provider = with_timeout(Broken(events=2), **bounds)
    with pytest.raises(StreamInterruptedError) as caught:
        await read_all(provider)
    assert caught.value.partial_text == "<0><1>"


async def test_a_foreign_exception_through_with_timeout_does_not_move_a_fallback() -> None:
    # Classified as a request fault (unknown errors are), it ends the call: the fallback is not tried.
    called: list[str] = []

    class Second(Broken):
        name = "second"

        async def complete(self, request: LLMRequest) -> LLMResponse:
            called.append("second")
            return LLMResponse("ok")

    chain = with_fallback(with_timeout(Broken(), attempt=5.0), Second())
    with pytest.raises(ProviderError) as caught:
        await chain.complete(REQ)
    assert caught.value.kind is ErrorKind.request
    assert called == []


def _resource_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.mark.parametrize("after", [0.0, 5.0])
async def test_a_hedged_stream_left_before_its_first_read_leaves_nothing_unclosed(after: float) -> None:
    # The winner's events cross from its task through a memory stream; the consumer's end of it was closed by the
    # relay generator only once that generator had started: a stream left before its first read left it to the
    # garbage collector (ResourceWarning: Unclosed <MemoryObjectReceiveStream>).
    provider = with_hedge(ScriptedProvider(["hello there"]), after=after)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with provider.stream(REQ):
            pass
        gc.collect()
    assert _resource_warnings(caught) == []


async def test_a_hedged_stream_cancelled_before_its_first_read_leaves_nothing_unclosed() -> None:
    provider = with_hedge(ScriptedProvider(["hello there"]), after=0.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with anyio.CancelScope() as scope:
            async with provider.stream(REQ):
                scope.cancel()
                await anyio.sleep(1)
        gc.collect()
    assert _resource_warnings(caught) == []


class Empty(Broken):
    """A vendor whose stream ends without a single event (not even its ``StreamEnd``)."""

    def stream(self, request: LLMRequest) -> Any:
        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            async def gen() -> AsyncIterator[StreamEvent]:
                await anyio.sleep(self.delay)
                nothing: tuple[StreamEvent, ...] = ()
                for event in nothing:  # (an async generator that yields nothing)
                    yield event

            events = gen()
            try:
                yield events
            finally:
                await events.aclose()  # type: ignore[attr-defined]

        return cm()


@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
async def test_with_timeout_raises_on_a_stream_that_ends_before_its_first_event(bounds: dict[str, Any]) -> None:
    # Every other decorator raises MalformedResponseError (transient: retried, failed over) for a stream without a
    # single event — the contract promises at least a StreamEnd; with_timeout relayed it as an empty success.
    with pytest.raises(MalformedResponseError) as caught:
        await read_all(with_timeout(Empty(), **bounds))
    assert caught.value.kind is ErrorKind.transient


async def test_an_empty_stream_under_with_timeout_is_retried() -> None:
    from agentactors.providers.scripted import ScriptedProvider as Scripted
    from agentactors.resilience import with_retry

    class Once(Empty):
        opened = 0

        def stream(self, request: LLMRequest) -> Any:
            Once.opened += 1
            if Once.opened == 1:
                return super().stream(request)
            return Scripted(["fine"]).stream(request)

    events = await read_all(with_retry(with_timeout(Once(), first_event=1.0), base_delay=0))
    assert isinstance(events[-1], StreamEnd) and events[-1].response.content == "fine"
    assert Once.opened == 2


async def test_a_hedged_stream_cancelled_as_its_winner_claims_leaves_nothing_unclosed() -> None:
    # The caller's scope is cancelled at the instant the first copy delivers its first event: the call leaves through
    # its cancellation path with a winner whose events were never relayed.
    scope = anyio.CancelScope()

    class CancelsOnFirstEvent(Broken):
        def stream(self, request: LLMRequest) -> Any:
            @asynccontextmanager
            async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
                async def gen() -> AsyncIterator[StreamEvent]:
                    await anyio.sleep(1)
                    scope.cancel()  # (no checkpoint before the event: the copy claims the race all the same)
                    yield TextDelta("first")
                    await anyio.sleep(1)

                events = gen()
                try:
                    yield events
                finally:
                    await events.aclose()  # type: ignore[attr-defined]

            return cm()

    provider = with_hedge(CancelsOnFirstEvent(), after=5.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with scope:
            await read_all(provider)
        gc.collect()
    assert scope.cancelled_caught
    assert _resource_warnings(caught) == []
