"""An answer its asker gave up on after it was ready is released (the ReleasableAnswer protocol).

An asker cancelled (or timed out) after the handler answered but before the answer reached it abandons an
answer nobody will see; one that owns work — a ProviderStream's feeding task and HTTP request — must let it
go.  The kernel calls ``release_unclaimed()`` on such an answer, once; other answers are just dropped.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from agentactors.actors import ReleasableAnswer, Runtime
from agentactors.errors import AskTimeout
from agentactors.gateway import ProviderActor, ProviderStream, Stream
from agentactors.messages import LLMRequest, Message
from tests.unit.gateway.test_provider import CountingStreamProvider

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest([Message.user("hello")])


class Owned:
    """An answer that owns work: counts its releases."""

    def __init__(self, fail: bool = False) -> None:
        self.released = 0
        self.fail = fail

    def release_unclaimed(self) -> None:
        self.released += 1
        if self.fail:
            raise RuntimeError("release failed")


class Answering:
    """Answers ``(scope, answer)`` with ``answer``, cancelling the asker's ``scope`` first (it gives up then)."""

    async def receive(self, message: tuple[anyio.CancelScope | None, Any]) -> Any:
        scope, answer = message
        if scope is not None:
            scope.cancel()
        return answer


def test_the_protocol_is_checked_by_shape() -> None:
    assert isinstance(Owned(), ReleasableAnswer)
    assert not isinstance("a plain answer", ReleasableAnswer)


@pytest.mark.parametrize("seconds", [None, 30.0])
async def test_an_answer_abandoned_after_it_was_ready_is_released_once(seconds: float | None) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Answering(), direct=False)  # answered in a worker, taken by the asker later
        answer = Owned()
        with anyio.CancelScope() as scope:
            await ref.ask((scope, answer), timeout=seconds)  # with one: the kept-answer path
        assert scope.cancelled_caught
        assert answer.released == 1
        # Taken answers are never released; plain abandoned answers are simply dropped.
        kept = Owned()
        assert await ref.ask((None, kept)) is kept
        with anyio.CancelScope() as scope:
            await ref.ask((scope, "plain"))
        await rt.wait_idle()
        assert kept.released == 0


async def test_a_release_that_raises_is_logged_and_the_askers_cancellation_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Runtime() as rt:
        ref = rt.spawn(Answering(), direct=False)
        answer = Owned(fail=True)
        with caplog.at_level(logging.WARNING, logger="agentactors.actors"), anyio.CancelScope() as scope:
            await ref.ask((scope, answer))
        assert scope.cancelled_caught and answer.released == 1
    assert any("releasing an unclaimed Owned raised RuntimeError" in r.getMessage() for r in caplog.records)


@pytest.mark.virtual_time
async def test_a_direct_answer_given_past_the_timeout_is_released() -> None:
    class Late:
        async def receive(self, answer: Owned) -> Owned:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(2.0)  # shielded past the ask's deadline: its answer is a timeout
            return answer

    async with Runtime() as rt:
        ref = rt.spawn(Late())
        answer = Owned()
        with pytest.raises(AskTimeout):
            await ref.ask(answer, timeout=1.0)
        assert answer.released == 1


class _GivingUpProvider(ProviderActor):
    """A ProviderActor whose asker gives up right after the stream was answered."""

    asker: anyio.CancelScope | None = None

    async def receive(self, message: Any) -> Any:
        answer = await super().receive(message)
        if self.asker is not None:
            self.asker.cancel()
        return answer


async def test_a_provider_stream_abandoned_by_its_asker_cancels_its_feeder_and_request() -> None:
    provider = CountingStreamProvider(10_000)
    async with Runtime() as rt:
        actor = _GivingUpProvider(provider)
        ref = rt.spawn(actor, direct=False)
        with anyio.CancelScope() as scope:
            actor.asker = scope
            await ref.ask(Stream(REQUEST))
        assert scope.cancelled_caught
        with anyio.fail_after(5):
            await rt.wait_idle()
        assert provider.closed_early  # the feeding task and its "HTTP request" were cancelled
        assert provider.produced < 100
        assert rt.stats().tasks == 0


def test_a_provider_stream_is_a_releasable_answer() -> None:
    assert issubclass(ProviderStream, ReleasableAnswer)
