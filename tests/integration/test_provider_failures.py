"""Each vendor provider against the FakeVendor when things go wrong: every error class with its
retry-after, x-should-retry, cancellation (the server sees the disconnect), a stream cut mid-way, an
in-band stream error, malformed JSON, a client timeout — and the canary key never leaks anywhere."""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import pytest

from agentactors.errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    ProviderTimeout,
    StreamInterruptedError,
)
from agentactors.messages import TextDelta
from agentactors.testing.fakevendor import FakeError, FakeMalformed, FakeReply, FakeVendor
from tests.support.providers import CANARY, WIRES, ask, collect, provider

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("wire", WIRES)]


def _overloaded(wire: str) -> int:
    return 529 if wire == "anthropic" else 503


# (script item, expected kind, retryable, retry_after); the wire decides 529 vs 503.
ERROR_CASES: dict[str, tuple[Callable[[str], FakeError], ErrorKind, bool, float | None]] = {
    "429 retry-after": (lambda w: FakeError(429, retry_after=7), ErrorKind.transient, True, 7.0),
    "429 retry-after-ms": (lambda w: FakeError(429, retry_after_ms=1500), ErrorKind.transient, True, 1.5),
    "overloaded": (lambda w: FakeError(_overloaded(w)), ErrorKind.transient, True, None),
    "500": (lambda w: FakeError(500), ErrorKind.transient, True, None),
    "401": (lambda w: FakeError(401), ErrorKind.account, False, None),
    "400": (lambda w: FakeError(400, message="messages: bad"), ErrorKind.request, False, None),
    "x-should-retry true": (lambda w: FakeError(400, should_retry=True), ErrorKind.transient, True, None),
    "x-should-retry false": (lambda w: FakeError(_overloaded(w), should_retry=False), ErrorKind.transient, False,
                             None),
}


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
async def test_error_classes(fake_vendor: FakeVendor, wire: str, streamed: bool) -> None:
    """One provider meets every error class in turn (one connection pool, as in production)."""
    fake_vendor.script(*(make(wire) for make, *_ in ERROR_CASES.values()))
    async with provider(wire, fake_vendor) as p:
        for case, (make, kind, retryable, retry_after) in ERROR_CASES.items():
            with pytest.raises(ProviderError) as caught:
                if streamed:
                    await collect(p, ask())
                else:
                    await p.complete(ask())
            err = caught.value
            assert not isinstance(err, StreamInterruptedError), case  # it failed before the first event
            assert (err.kind, err.retryable, err.status) == (kind, retryable, make(wire).status), case
            assert err.retry_after == retry_after, case
            assert err.provider == wire, case
            assert CANARY not in f"{err!s} {err!r} {err.body_excerpt}", case
    assert [r.outcome for r in fake_vendor.requests] == ["error"] * len(ERROR_CASES)


async def test_gemini_style_retry_info_in_the_body(fake_vendor: FakeVendor, wire: str) -> None:
    if wire != "gemini":
        pytest.skip("RetryInfo is Gemini's")
    fake_vendor.script(FakeError(429, retry_after=37, headers={}))
    async with provider(wire, fake_vendor) as p:
        with pytest.raises(ProviderError) as caught:
            await p.complete(ask())
    assert caught.value.retry_after == 37 and caught.value.kind is ErrorKind.transient


async def test_cancelled_call_is_seen_as_a_disconnect(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text="too late", latency=10))
    async with provider(wire, fake_vendor) as p:
        answered: list[object] = []

        async def call() -> None:
            answered.append(await p.complete(ask()))

        # Cancelled once the vendor holds the request (not after a fixed delay: on a busy machine the request
        # may not have reached it yet, and there would be no disconnect to see).
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await fake_vendor.wait_for(lambda requests: len(requests) >= 1, within=20)
            tg.cancel_scope.cancel()
        assert answered == []
        (gone,) = await fake_vendor.wait_for_disconnects(1)
        assert gone.outcome == "disconnected" and not gone.stream
        # The provider stays usable after a cancelled call.
        fake_vendor.script("fine")
        assert (await p.complete(ask())).content == "fine"


async def test_cancelled_stream_is_seen_as_a_disconnect(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text="one two three four five", words_per_chunk=1, chunk_latency=10))
    texts = []
    async with provider(wire, fake_vendor) as p:
        # Cancelled at the first delta (the next is 10 s away), not after a fixed delay a busy machine may pass
        # before the first one arrives.
        with anyio.move_on_after(30) as scope:
            async with p.stream(ask()) as stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        texts.append(event.text)
                        scope.cancel()
        assert scope.cancelled_caught
    assert texts == ["one"]
    (gone,) = await fake_vendor.wait_for_disconnects(1)
    assert gone.stream and gone.outcome == "disconnected"


async def test_leaving_a_stream_early_closes_it(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text="one two three four five", words_per_chunk=1, chunk_latency=10))
    async with provider(wire, fake_vendor) as p:
        async with p.stream(ask()) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    break
    (gone,) = await fake_vendor.wait_for_disconnects(1)
    assert gone.disconnected


async def test_stream_cut_midway_is_interrupted_with_partial_text(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text="one two three four five six", words_per_chunk=1, cut_after=2))
    async with provider(wire, fake_vendor) as p:
        with pytest.raises(StreamInterruptedError) as caught:
            await collect(p, ask())
    assert caught.value.partial_text == "one two"
    assert caught.value.retryable is False and caught.value.provider == wire
    assert fake_vendor.requests[0].outcome == "cut"


async def test_stream_cut_before_any_event_is_retryable(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text="one two", cut_after=0), FakeReply(text="one two", cut_after=0))
    async with provider(wire, fake_vendor) as p:
        with pytest.raises(ProviderError) as streamed:
            await collect(p, ask())
        with pytest.raises(ProviderError) as completed:
            await p.complete(ask())
    for err in (streamed.value, completed.value):
        assert not isinstance(err, StreamInterruptedError)
        assert err.kind is ErrorKind.transient and err.retryable


async def test_in_band_stream_error(fake_vendor: FakeVendor, wire: str) -> None:
    overloaded = FakeError(_overloaded(wire))
    fake_vendor.script(
        FakeReply(text="one two three four", words_per_chunk=1, stream_error=overloaded, stream_error_after=2),
        FakeReply(text="one two", stream_error=overloaded, stream_error_after=0),
    )
    async with provider(wire, fake_vendor) as p:
        with pytest.raises(StreamInterruptedError) as midway:
            await collect(p, ask())
        with pytest.raises(ProviderError) as first:
            await collect(p, ask())
    # After some text: interrupted (never a partial answer returned as complete), caused by a transient error.
    assert midway.value.partial_text == "one two"
    cause = midway.value.__cause__
    assert isinstance(cause, ProviderError) and cause.kind is ErrorKind.transient
    # Before any text: the classified error itself, which a retry may repeat.
    assert not isinstance(first.value, StreamInterruptedError)
    assert first.value.kind is ErrorKind.transient and first.value.retryable


async def test_malformed_json(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeMalformed(), FakeMalformed(body="{not json"), FakeMalformed(body="[]"))
    async with provider(wire, fake_vendor) as p:
        with pytest.raises(MalformedResponseError) as plain:
            await p.complete(ask())
        with pytest.raises(MalformedResponseError):
            await collect(p, ask())
        with pytest.raises(MalformedResponseError):
            await p.complete(ask())  # valid JSON, but not this wire's shape
    assert plain.value.kind is ErrorKind.transient and plain.value.retryable


async def test_client_timeout_on_a_hanging_vendor(fake_vendor: FakeVendor, wire: str) -> None:
    fake_vendor.script(FakeReply(text="eventually", latency=10))
    async with provider(wire, fake_vendor, timeout=0.2) as p:
        with pytest.raises(ProviderTimeout) as caught:
            await p.complete(ask())
    assert caught.value.kind is ErrorKind.transient
    (gone,) = await fake_vendor.wait_for_disconnects(1)
    assert gone.outcome == "disconnected"


async def test_the_canary_key_never_leaks(
    fake_vendor: FakeVendor, wire: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_vendor.script(
        "fine",
        FakeReply(text="a b c", words_per_chunk=1),
        FakeError(401),
        FakeError(429, retry_after=1),
        FakeReply(text="a b c d", words_per_chunk=1, cut_after=2),
        FakeMalformed(),
        FakeReply(text="a b c", stream_error=FakeError(500), stream_error_after=1),
    )
    errors: list[BaseException] = []
    async with provider(wire, fake_vendor) as p:
        assert CANARY not in repr(p)
        await p.complete(ask())
        await collect(p, ask())
        for streamed in (False, False, True, False, True):
            try:
                if streamed:
                    await collect(p, ask())
                else:
                    await p.complete(ask())
            except ProviderError as exc:
                errors.append(exc)
    assert len(errors) == 5
    records = fake_vendor.requests
    assert len(records) == 7 and all(r.api_key_present and r.key_leaks == () for r in records)
    assert CANARY not in repr(records)
    assert all(CANARY not in r.path for r in records)  # never in a URL
    for err in errors:
        notes = " ".join(getattr(err, "__notes__", ()))
        assert CANARY not in f"{err!s} {err!r} {getattr(err, 'body_excerpt', '')} {notes}"
    assert CANARY not in caplog.text
