"""A ``stream()`` whose context manager's value is no async iterator, and a ``StreamEnd`` whose response is no answer.

Such a provider's first read raised Python's ``AttributeError`` (``'list' object has no attribute '__anext__'``),
classified as a request error on every path: not counted by a breaker, not moved on from by a fallback chain or a
pool, and named after nobody in particular.  It is the member's broken contract: a :class:`MalformedResponseError`
naming it — transient (counted, moved on from), not retryable — on a bare run, behind a ``ProviderActor`` with a
token budget and behind every decorator.

A ``StreamEnd`` whose response is no ``LLMResponse`` reached the decorators that read it (a fallback chain naming
its server, the layers carrying the attempts they gave up on) as an ``AttributeError``/``TypeError`` of theirs;
it is relayed as it is, the run's step names it, and what was to ride on it is still charged.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import pytest

from agentactors import Agent, LLMRequest, LLMResponse, RunResult, Runtime, ScriptedProvider
from agentactors.errors import MalformedResponseError
from agentactors.gateway import ProviderActor, Stream
from agentactors.messages import Message, StreamEnd, StreamEvent, TextDelta
from agentactors.pricing import pop_cut_short
from agentactors.resilience import (
    with_circuit_breaker,
    with_fallback,
    with_hedge,
    with_pool,
    with_retry,
    with_timeout,
)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

OK = LLMResponse(content="ok")


def _sync_events() -> Iterator[StreamEvent]:
    yield TextDelta("ok")
    yield StreamEnd(OK)


async def _coroutine() -> list[StreamEvent]:
    return [TextDelta("ok"), StreamEnd(OK)]


#: What a broken ``__aenter__`` returns: each made afresh per stream.
VALUES: dict[str, Callable[[], Any]] = {
    "list": lambda: [TextDelta("ok"), StreamEnd(OK)],
    "none": lambda: None,
    "sync_generator": _sync_events,
    "coroutine": _coroutine,
}
NAMED = {"list": "list", "none": "NoneType", "sync_generator": "generator", "coroutine": "coroutine"}


class Valued:
    """``stream()`` returns an async context manager whose value is ``make()`` (no async iterator)."""

    name = "mine"
    default_model = "mine-1"

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make
        self.calls = 0
        self.values: list[Any] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return OK

    def stream(self, request: LLMRequest) -> Any:
        self.calls += 1
        me = self

        class Opened:
            async def __aenter__(self) -> Any:
                value = me.make()
                me.values.append(value)
                return value

            async def __aexit__(self, *exc: object) -> None:
                return None

        return Opened()

    async def aclose(self) -> None:
        pass


WRAPS: dict[str, Callable[[Any], Any]] = {
    "bare": lambda p: p,
    "retry": lambda p: with_retry(p),
    "breaker": lambda p: with_circuit_breaker(p),
    "timeout": lambda p: with_timeout(p, attempt=30),
    "hedge": lambda p: with_hedge(p, after=1.0),
}


async def _run(how: str, provider: Any) -> RunResult[Any]:
    if how == "budget":  # a ProviderActor with a token budget
        async with Runtime() as rt:
            ref = rt.spawn(ProviderActor(provider, tokens_per_minute=100_000))
            return await Agent(ref).run("hi", on_token=lambda text: None)
    agent = Agent(provider)
    if how == "on_token":
        return await agent.run("hi", on_token=lambda text: None)
    async with agent.stream("hi") as handle:
        async for _ in handle:
            pass
    assert handle.result is not None
    return handle.result


def _malformed(result: RunResult[Any], *words: str) -> MalformedResponseError:
    assert not result.ok and result.generation_failed, result
    assert isinstance(result.error, MalformedResponseError), repr(result.error)
    assert result.error.provider == "mine", result.error.provider
    text = str(result.error)
    for word in words:
        assert word in text, text
    assert "AttributeError" not in text and "TypeError" not in text, text
    return result.error


async def read_all(provider: Any, request: LLMRequest | None = None) -> list[StreamEvent]:
    async with provider.stream(request or LLMRequest([Message.user("hi")])) as events:
        return [event async for event in events]


# -- 1. the context manager's value is no async iterator ---------------------------------------------------------


@pytest.mark.parametrize("how", ["on_token", "stream", "budget"])
@pytest.mark.parametrize("wrap", list(WRAPS))
@pytest.mark.parametrize("value", list(VALUES))
async def test_a_value_that_is_no_async_iterator_fails_the_run_naming_the_provider(
    how: str, wrap: str, value: str
) -> None:
    provider = Valued(VALUES[value])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a coroutine value: closed, not left to warn "never awaited"
        result = await _run(how, WRAPS[wrap](provider))
    error = _malformed(result, NAMED[value], "async iterator")
    assert error.retryable is False  # the provider's code: asking again answers the same
    assert provider.calls == 1  # not retried
    for made in provider.values:
        if inspect.isgenerator(made):
            assert inspect.getgeneratorstate(made) == inspect.GEN_CLOSED
        if inspect.iscoroutine(made):
            assert inspect.getcoroutinestate(made) == inspect.CORO_CLOSED


class NoContextManager(Valued):
    """``stream()`` returns ``make()`` itself: no async context manager at all."""

    def stream(self, request: LLMRequest) -> Any:
        self.calls += 1
        value = self.make()
        self.values.append(value)
        return value


@pytest.mark.parametrize("pull", [False, True])
@pytest.mark.parametrize("value", list(VALUES))
@pytest.mark.parametrize("kind", [Valued, NoContextManager])
async def test_a_provider_actors_stream_names_a_provider_that_broke_the_contract(
    kind: type[Valued], value: str, pull: bool
) -> None:
    """Asked for a ``Stream`` directly (the fed path, and the pulled one): the reader gets the named error, not
    Python's TypeError or AttributeError (a request error: not counted, not moved on from)."""
    provider = kind(VALUES[value])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        async with Runtime() as rt:
            ref = rt.spawn(ProviderActor(provider))
            with pytest.raises(MalformedResponseError) as caught:
                async with await ref.ask(Stream(LLMRequest((Message.user("hi"),)), pull=pull)) as events:
                    async for _ in events:
                        pass
    assert caught.value.provider == "mine" and caught.value.retryable is False
    assert "TypeError" not in str(caught.value) and "AttributeError" not in str(caught.value)
    assert provider.calls == 1
    for made in provider.values:
        if inspect.iscoroutine(made):
            assert inspect.getcoroutinestate(made) == inspect.CORO_CLOSED


@pytest.mark.parametrize("how", ["on_token", "stream", "budget"])
@pytest.mark.parametrize("wrap", list(WRAPS))
async def test_a_stream_that_returned_none_fails_the_run_naming_the_provider(how: str, wrap: str) -> None:
    """``def stream(...)`` that forgot its ``return``: ``None`` is no async context manager, named as any other."""
    provider = NoContextManager(VALUES["none"])
    result = await _run(how, WRAPS[wrap](provider))
    _malformed(result, "NoneType", "async context manager")
    assert provider.calls == 1


@pytest.mark.parametrize("value", ["list", "none"])
async def test_a_breaker_counts_it_as_the_members_failure(value: str) -> None:
    breaker = with_circuit_breaker(Valued(VALUES[value]))
    with pytest.raises(MalformedResponseError):
        await read_all(breaker)
    stats = breaker.stats_for(None)
    assert stats.failures == 1
    assert isinstance(stats.last_error, MalformedResponseError)


@pytest.mark.parametrize("how", ["on_token", "stream", "budget"])
@pytest.mark.parametrize(
    "chain",
    [
        lambda p: with_fallback(p, ScriptedProvider(["backup"], name="backup")),
        lambda p: with_pool(p, ScriptedProvider(["backup"], name="backup"), strategy="round_robin"),
    ],
    ids=["fallback", "pool"],
)
async def test_a_chain_moves_on_to_the_next_member(how: str, chain: Callable[[Any], Any]) -> None:
    result = await _run(how, chain(Valued(VALUES["list"])))
    assert result.ok, result.error
    assert result.content == "backup"


async def test_an_async_generator_raising_attribute_error_is_still_its_own_failure() -> None:
    # Only a value that is no async iterator is named so: a real stream's own AttributeError is its failure, as before.
    class Raising(Valued):
        def __init__(self) -> None:
            async def events() -> AsyncIterator[StreamEvent]:
                if self.calls:
                    raise AttributeError("the SDK's own bug")
                yield TextDelta("never")

            super().__init__(events)

    result = await _run("on_token", Raising())
    assert result.generation_failed
    assert not isinstance(result.error, MalformedResponseError)
    assert "the SDK's own bug" in str(result.error)


# -- 2. a StreamEnd whose response is no LLMResponse ---------------------------------------------------------------


class Ends:
    """Streams ``TextDelta("ok")`` then ``StreamEnd(junk)``; the calls in ``hang`` (1-based) wait first for an hour."""

    name = "mine"
    default_model = "mine-1"

    def __init__(self, junk: Any = "junk", hang: tuple[int, ...] = ()) -> None:
        self.junk = junk
        self.hang = hang
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return OK

    def stream(self, request: LLMRequest) -> Any:
        self.calls += 1
        call = self.calls
        junk = self.junk
        hang = self.hang

        async def events() -> AsyncGenerator[StreamEvent, None]:
            if call in hang:
                await anyio.sleep(3600)
            yield TextDelta("ok")
            yield StreamEnd(junk)

        opened = events()

        class Opened:
            async def __aenter__(self) -> AsyncIterator[StreamEvent]:
                return opened

            async def __aexit__(self, *exc: object) -> None:
                await opened.aclose()

        return Opened()

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize("how", ["on_token", "stream", "budget"])
@pytest.mark.parametrize("junk", [None, "junk", {"content": "x"}])
async def test_a_fallback_chain_relays_an_end_without_an_answer_for_the_step_to_name(how: str, junk: Any) -> None:
    # The chain read the served member's response (its provider) and failed with its own AttributeError.
    result = await _run(how, with_fallback(Ends(junk), ScriptedProvider(["backup"], name="backup")))
    assert result.generation_failed
    assert isinstance(result.error, MalformedResponseError), repr(result.error)
    assert type(junk).__name__ in str(result.error)
    assert "AttributeError" not in str(result.error)


def _layers() -> dict[str, Callable[[], tuple[Any, Any]]]:
    """A layer whose first attempt a ``with_timeout`` inside gives up on (sent: billed), then an end without an answer.

    Each gives ``(provider, member)``: the attempt given up on must ride on the end, which cannot carry it."""

    def retry() -> tuple[Any, Any]:
        member = Ends(hang=(1,))
        return with_retry(with_timeout(member, first_event=5)), member

    def fallback() -> tuple[Any, Any]:
        member = Ends()
        return with_fallback(with_timeout(Ends(hang=(1,)), first_event=5), member), member

    def pool() -> tuple[Any, Any]:
        member = Ends()
        return with_pool(with_timeout(Ends(hang=(1,)), first_event=5), member, strategy="round_robin"), member

    def hedge() -> tuple[Any, Any]:
        # The first copy hangs; the hedge copy wins with an end that cannot carry the loser.
        member = Ends(hang=(1,))
        return with_hedge(member, after=1.0, max_extra=1.0), member

    return {"retry": retry, "fallback": fallback, "pool": pool, "hedge": hedge}


@pytest.mark.parametrize("layer", list(_layers()))
async def test_an_end_without_an_answer_is_relayed_and_what_was_to_ride_on_it_is_charged(layer: str) -> None:
    # It cannot carry the attempts given up on (with_cut_short on a str: a TypeError, an AttributeError of the
    # layer's): relayed as it is, and those attempts are noted for the run, as for a stream without its end.
    provider, member = _layers()[layer]()
    request = LLMRequest([Message.user("hi")])
    events = await read_all(provider, request)
    end = events[-1]
    assert isinstance(end, StreamEnd)
    response: object = end.response
    assert response == "junk"
    charged = pop_cut_short(request)
    assert charged, "the attempt given up on was lost"
    assert member.calls >= 1


@pytest.mark.parametrize("layer", list(_layers()))
async def test_an_end_without_an_answer_behind_a_layer_fails_the_run_with_a_typed_error(layer: str) -> None:
    provider, _ = _layers()[layer]()
    result = await _run("on_token", provider)
    assert result.generation_failed
    assert isinstance(result.error, MalformedResponseError), repr(result.error)
    assert "not an LLMResponse" in str(result.error)
